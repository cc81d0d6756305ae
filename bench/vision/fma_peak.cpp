// The FMA peak probe (see fma_peak.h): 12 independent chains per thread,
// enough to cover a 4-cycle latency on two FMA ports.
#include "fma_peak.h"

#include "kernels/isa.h"
#include "base/ThreadPool.h"

#include <atomic>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fm::bench {
namespace {

constexpr long kIterations = 4000000;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) float chainsAvx512() {
  __m512 a[12];
  for (int i = 0; i < 12; ++i)
    a[i] = _mm512_set1_ps(1.0f + 1e-3f * float(i));
  const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (long n = 0; n < kIterations; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i)
      a[i] = _mm512_fmadd_ps(a[i], b, c);
  }
  __m512 s = a[0];
  for (int i = 1; i < 12; ++i)
    s = _mm512_add_ps(s, a[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) float chainsAvx2() {
  __m256 a[12];
  for (int i = 0; i < 12; ++i)
    a[i] = _mm256_set1_ps(1.0f + 1e-3f * float(i));
  const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (long n = 0; n < kIterations; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i)
      a[i] = _mm256_fmadd_ps(a[i], b, c);
  }
  __m256 s = a[0];
  for (int i = 1; i < 12; ++i)
    s = _mm256_add_ps(s, a[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}
#endif

} // namespace

double fmaPeakGflops(fm::rt::ThreadPool &pool) {
  int lanes = 0;
  float (*chains)() = nullptr;
#if defined(__x86_64__)
  if (fm::kernels::kernelIsaAvailable(fm::kernels::KernelIsa::Avx512)) {
    chains = &chainsAvx512;
    lanes = 16;
  } else if (fm::kernels::kernelIsaAvailable(fm::kernels::KernelIsa::Avx2)) {
    chains = &chainsAvx2;
    lanes = 8;
  }
#endif
  if (!chains)
    return 0.0;
  std::atomic<float> sink{0.0f};
  double best = 0.0;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    pool.parallelFor(pool.numThreads(), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        sink.store(sink.load() + chains());
    });
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double gflops = 2.0 * 12 * lanes * double(kIterations) * pool.numThreads() / s * 1e-9;
    best = gflops > best ? gflops : best;
  }
  return best;
}

} // namespace fm::bench
