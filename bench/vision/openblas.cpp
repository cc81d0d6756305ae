// Loads OpenBLAS with dlopen (see openblas.h).
#include "openblas.h"

#include <cstdlib>
#include <dlfcn.h>

namespace fm::bench {
namespace {

// CBLAS enum values (cblas.h).
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

} // namespace

OpenBlas::OpenBlas(const char *coreType) {
  if (coreType && *coreType && !std::getenv("OPENBLAS_CORETYPE"))
    setenv("OPENBLAS_CORETYPE", coreType, 0);
  void *lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    description_ = std::string("OpenBLAS not loaded: ") + dlerror();
    return;
  }
  sgemm_ = reinterpret_cast<Sgemm>(dlsym(lib, "cblas_sgemm"));
  setThreads_ =
      reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads"));
  auto config = reinterpret_cast<char *(*)()>(dlsym(lib, "openblas_get_config"));
  auto core = reinterpret_cast<char *(*)()>(dlsym(lib, "openblas_get_corename"));
  if (!sgemm_) {
    description_ = "OpenBLAS loaded without cblas_sgemm";
    return;
  }
  description_ = config ? config() : "OpenBLAS";
  if (core)
    description_ += std::string(", core ") + core();
}

void OpenBlas::setThreads(int threads) const {
  if (setThreads_)
    setThreads_(threads);
}

void OpenBlas::gemm(const float *x, int64_t M, int64_t K, const float *w,
                    int64_t N, float *y) const {
  sgemm_(kRowMajor, kNoTrans, kTrans, int(M), int(N), int(K), 1.0f, x, int(K),
         w, int(K), 0.0f, y, int(N));
}

} // namespace fm::bench
