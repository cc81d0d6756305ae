// Chooses the matmul path for this CPU once and splits calls across threads.
#include "kernels/matmul.h"

#include "kernels/matmul_isa.h"
#include "base/ThreadPool.h"

#include <cassert>

namespace fm::kernels {
namespace {

using detail::MatmulIsa;

// Matvec: rows of w per parallel work unit. 16 rows keep each thread's
// stores to y on its own cache lines.
constexpr int64_t kMatvecUnitRows = 16;
// Below this many weight elements a call runs on the calling thread: waking
// the pool costs more than it saves.
constexpr int64_t kMinParallelWork = 1 << 15;
// Prefill work units: a block of w rows (reused from L2 across the x rows
// of the unit) by a block of x rows. Units are numbered w-block-major, so
// a thread's contiguous range of units reads each w block from memory once.
constexpr int64_t kPrefillUnitRowsN = 64;
constexpr int64_t kPrefillUnitRowsM = 128;

const MatmulIsa &isaTable(MatmulPath path) {
  assert(kernelIsaAvailable(path) && "matmul path not available");
  // Never run instructions this CPU lacks, even when asserts are off.
  if (!kernelIsaAvailable(path))
    return detail::kMatmulGeneric;
  switch (path) {
#if defined(FM_KERNELS_X86)
  case MatmulPath::Avx2:
    return detail::kMatmulAvx2;
  case MatmulPath::Avx512:
    return detail::kMatmulAvx512;
#endif
#if defined(FM_KERNELS_NEON)
  case MatmulPath::Neon:
    return detail::kMatmulNeon;
#endif
  default:
    return detail::kMatmulGeneric;
  }
}

template <typename W>
void run(detail::MatmulRangeFn<W> range, const float *x, int64_t M, int64_t K,
         const W *w, int64_t N, float *y, bool accumulate,
         fm::rt::ThreadPool *pool) {
  if (M <= 0 || N <= 0)
    return;
  if (K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M * N; ++i)
        y[i] = 0.0f;
    return;
  }
  bool parallel =
      pool && pool->numThreads() > 1 && M * N * K >= kMinParallelWork;
  if (M <= kMatvecMaxRows) {
    // The matvec (isa.h), split by output rows: every thread reads its
    // rows of w once for all M rows of x.
    if (!parallel) {
      range(x, K, w, y, N, 0, M, 0, N, accumulate);
      return;
    }
    int64_t units = (N + kMatvecUnitRows - 1) / kMatvecUnitRows;
    pool->parallelFor(units, [&](int64_t begin, int64_t end) {
      int64_t n1 = end * kMatvecUnitRows;
      range(x, K, w, y, N, 0, M, begin * kMatvecUnitRows, n1 < N ? n1 : N,
            accumulate);
    });
    return;
  }
  int64_t mUnits = (M + kPrefillUnitRowsM - 1) / kPrefillUnitRowsM;
  int64_t nUnits = (N + kPrefillUnitRowsN - 1) / kPrefillUnitRowsN;
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      int64_t m0 = (unit % mUnits) * kPrefillUnitRowsM;
      int64_t n0 = (unit / mUnits) * kPrefillUnitRowsN;
      int64_t m1 = m0 + kPrefillUnitRowsM < M ? m0 + kPrefillUnitRowsM : M;
      int64_t n1 = n0 + kPrefillUnitRowsN < N ? n0 + kPrefillUnitRowsN : N;
      range(x, K, w, y, N, m0, m1, n0, n1, accumulate);
    }
  };
  if (parallel)
    pool->parallelFor(mUnits * nUnits, body);
  else
    body(0, mUnits * nUnits);
}

} // namespace

const char *matmulPathName() { return kernelIsaName(kernelIsaBest()); }

void matmulF32On(MatmulPath path, const float *x, int64_t M, int64_t K,
                 const float *w, int64_t N, float *y, bool accumulate,
                 fm::rt::ThreadPool *pool) {
  run(isaTable(path).f32, x, M, K, w, N, y, accumulate, pool);
}

void matmulF16WOn(MatmulPath path, const float *x, int64_t M, int64_t K,
                  const uint16_t *w, int64_t N, float *y, bool accumulate,
                  fm::rt::ThreadPool *pool) {
  run(isaTable(path).f16, x, M, K, w, N, y, accumulate, pool);
}

void matmulF32Block(const float *x, int64_t K, const float *w, float *y,
                    int64_t ldy, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                    bool accumulate) {
  if (m0 < m1 && n0 < n1)
    isaTable(kernelIsaBest()).f32(x, K, w, y, ldy, m0, m1, n0, n1, accumulate);
}

void matmulF16WBlock(const float *x, int64_t K, const uint16_t *w, float *y,
                     int64_t ldy, int64_t m0, int64_t m1, int64_t n0,
                     int64_t n1, bool accumulate) {
  if (m0 < m1 && n0 < n1)
    isaTable(kernelIsaBest()).f16(x, K, w, y, ldy, m0, m1, n0, n1, accumulate);
}

void matmulF32(const float *x, int64_t M, int64_t K, const float *w, int64_t N,
               float *y, bool accumulate, fm::rt::ThreadPool *pool) {
  matmulF32On(kernelIsaBest(), x, M, K, w, N, y, accumulate, pool);
}

void matmulF16W(const float *x, int64_t M, int64_t K, const uint16_t *w,
                int64_t N, float *y, bool accumulate,
                fm::rt::ThreadPool *pool) {
  matmulF16WOn(kernelIsaBest(), x, M, K, w, N, y, accumulate, pool);
}

} // namespace fm::kernels
