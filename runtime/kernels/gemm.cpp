// The packed GEMM's entry point: picks the instruction-set path, splits the
// output across threads and owns the per-thread panel buffers.
#include "kernels/gemm.h"

#include "kernels/gemm_isa.h"
#include "base/ThreadPool.h"

#include <cassert>
#include <cstdlib>

namespace fm::kernels {
namespace {

using detail::GemmIsa;
using detail::GemmProblem;

// Below this many multiply-adds a call runs on the calling thread.
constexpr int64_t kMinParallelWork = int64_t(1) << 18;

const GemmIsa &isaTable(KernelIsa isa) {
  assert(kernelIsaAvailable(isa) && "gemm path not available");
  // Never run instructions this CPU lacks, even when asserts are off.
  if (!kernelIsaAvailable(isa))
    return detail::kGemmGeneric;
  switch (isa) {
#if defined(FM_KERNELS_X86)
  case KernelIsa::Avx2:
    return detail::kGemmAvx2;
  case KernelIsa::Avx512:
    return detail::kGemmAvx512;
#endif
#if defined(FM_KERNELS_NEON)
  case KernelIsa::Neon:
    return detail::kGemmNeon;
#endif
  default:
    return detail::kGemmGeneric;
  }
}

/// A 64-byte aligned float buffer that only grows.
class PanelBuffer {
public:
  PanelBuffer() = default;
  PanelBuffer(const PanelBuffer &) = delete;
  PanelBuffer &operator=(const PanelBuffer &) = delete;
  ~PanelBuffer() { std::free(data_); }

  float *get(int64_t floats) {
    if (floats > size_) {
      std::free(data_);
      const size_t bytes = ((static_cast<size_t>(floats) * 4 + 63) / 64) * 64;
      data_ = static_cast<float *>(std::aligned_alloc(64, bytes));
      size_ = data_ ? floats : 0;
    }
    return data_;
  }

private:
  float *data_ = nullptr;
  int64_t size_ = 0;
};

/// This thread's panels: kept for the thread's lifetime, so that the pool's
/// persistent workers allocate once, not per call.
void threadPanels(const GemmIsa &isa, float **x, float **w) {
  thread_local PanelBuffer xBuffer, wBuffer;
  *x = xBuffer.get(isa.aFloats);
  *w = wBuffer.get(isa.bFloats);
}

void runBlock(const GemmIsa &isa, const GemmProblem &p, int64_t m0,
              int64_t m1, int64_t n0, int64_t n1) {
  if (m0 >= m1 || n0 >= n1)
    return;
  float *xPanel, *wPanel;
  threadPanels(isa, &xPanel, &wPanel);
  if (!xPanel || !wPanel)
    std::abort(); // Out of memory for a few MiB of panels: nothing sane left.
  isa.block(p, m0, m1, n0, n1, xPanel, wPanel);
}

} // namespace

void gemmF32On(KernelIsa path, const float *x, int64_t M, int64_t K,
               const float *w, int64_t N, const float *bias, float *y,
               bool accumulate, fm::rt::ThreadPool *pool) {
  assert(M >= 0 && K >= 0 && N >= 0 && "gemm: negative size");
  if (M <= 0 || N <= 0)
    return;
  if (K <= 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        y[i * N + j] = (accumulate ? y[i * N + j] : 0.0f) + (bias ? bias[j] : 0.0f);
    return;
  }
  const GemmIsa &isa = isaTable(path);
  const GemmProblem p{x, M, K, w, N, bias, y, accumulate};
  const int threads = pool ? pool->numThreads() : 1;
  if (threads <= 1 || M * N * K < kMinParallelWork) {
    runBlock(isa, p, 0, M, 0, N);
    return;
  }
  // Column slabs of whole tiles when there are enough for every thread
  // (each thread then packs all of x, but only its own part of w);
  // otherwise row blocks of whole tiles (each packs all of the narrow w).
  const int64_t nTiles = (N + isa.nr - 1) / isa.nr;
  const int64_t mTiles = (M + isa.mr - 1) / isa.mr;
  const bool byColumns = nTiles >= 2 * threads || nTiles >= mTiles;
  pool->parallelFor(threads, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      if (byColumns) {
        auto [b, e] = fm::rt::ThreadPool::chunk(nTiles, threads, int(t));
        runBlock(isa, p, 0, M, b * isa.nr, e * isa.nr < N ? e * isa.nr : N);
      } else {
        auto [b, e] = fm::rt::ThreadPool::chunk(mTiles, threads, int(t));
        runBlock(isa, p, b * isa.mr, e * isa.mr < M ? e * isa.mr : M, 0, N);
      }
    }
  });
}

void gemmF32Block(const float *x, int64_t M, int64_t K, const float *w,
                  int64_t N, const float *bias, float *y, bool accumulate,
                  int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  if (K <= 0) {
    for (int64_t i = m0; i < m1; ++i)
      for (int64_t j = n0; j < n1; ++j)
        y[i * N + j] = (accumulate ? y[i * N + j] : 0.0f) + (bias ? bias[j] : 0.0f);
    return;
  }
  const GemmProblem p{x, M, K, w, N, bias, y, accumulate};
  runBlock(isaTable(kernelIsaBest()), p, m0, m1, n0, n1);
}

void gemmF32(const float *x, int64_t M, int64_t K, const float *w, int64_t N,
             const float *bias, float *y, bool accumulate,
             fm::rt::ThreadPool *pool) {
  gemmF32On(kernelIsaBest(), x, M, K, w, N, bias, y, accumulate, pool);
}

} // namespace fm::kernels
