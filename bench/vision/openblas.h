// OpenBLAS's sgemm, loaded at run time (dlopen) as the benchmark's peer:
// before loading, OPENBLAS_CORETYPE is set to the kernels this CPU runs
// when the caller has not set it (OpenBLAS 0.3.21 does not recognize every
// recent x86 model and falls back to its SSE3 "Prescott" kernels, which
// would make a poor peer).
#pragma once

#include <cstdint>
#include <string>

namespace fm::bench {

class OpenBlas {
public:
  /// Loads libopenblas.so.0; `coreType` is set when OPENBLAS_CORETYPE is
  /// unset and non-empty. ok() tells whether it loaded.
  explicit OpenBlas(const char *coreType);
  bool ok() const { return sgemm_ != nullptr; }
  /// "OpenBLAS 0.3.21 ... SkylakeX", or why it did not load.
  const std::string &describe() const { return description_; }
  void setThreads(int threads) const;
  /// y[M][N] = x[M][K] · w[N][K]ᵀ, row-major.
  void gemm(const float *x, int64_t M, int64_t K, const float *w, int64_t N,
            float *y) const;

private:
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float *,
                         int, const float *, int, float, float *, int);
  Sgemm sgemm_ = nullptr;
  void (*setThreads_)(int) = nullptr;
  std::string description_;
};

} // namespace fm::bench
