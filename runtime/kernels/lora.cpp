// Chooses the LoRA path for this CPU once and splits the down and up
// products of a call across threads: one parallelFor for all the parts of
// a call (a fused matmul's stacked projections, several adapters), so a
// call wakes the pool twice however many projections it covers.
#include "kernels/lora.h"

#include "base/ThreadPool.h"
#include "kernels/lora_isa.h"
#include "kernels/qformat.h"

#include <cassert>

namespace fm::kernels {
namespace {

using detail::LoraIsa;

// Down products: rows of A per unit (the ISA kernels take 4 at a time).
constexpr int64_t kDownUnitRows = 8;
// Below this many multiply-adds a call runs on the calling thread: waking
// the pool costs more than it saves.
constexpr int64_t kMinParallelWork = 1 << 15;

const LoraIsa &isaTable(KernelIsa path) {
  assert(kernelIsaAvailable(path) && "lora path not available");
  if (!kernelIsaAvailable(path))
    return detail::kLoraGeneric;
  switch (path) {
#if defined(FM_KERNELS_X86)
  case KernelIsa::Avx2:
    return detail::kLoraAvx2;
  case KernelIsa::Avx512:
    return detail::kLoraAvx512;
#endif
  default:
    return detail::kLoraGeneric;
  }
}

KernelIsa bestPath() {
  static const KernelIsa path = [] {
    const KernelIsa best = kernelIsaBest();
    return best == KernelIsa::Neon ? KernelIsa::Generic : best;
  }();
  return path;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool parallel(fm::rt::ThreadPool *pool, int64_t work) {
  return pool && pool->numThreads() > 1 && work >= kMinParallelWork;
}

} // namespace

size_t loraMatrixBytes(int64_t rows, int64_t cols, bool q8, int group) {
  if (!q8)
    return size_t(rows) * size_t(cols) * 2;
  return size_t(rows) *
         packedRowBytes(QuantFormat{8, group, QuantGrid::Balanced}, cols);
}

namespace {

void downUnitRange(const LoraIsa &isa, const float *x, int64_t M, int64_t ldx,
                   float *t, int64_t ldt, const LoraDown *parts, size_t count,
                   int64_t begin, int64_t end) {
  // Units are numbered part after part; a range walks them in order.
  size_t p = 0;
  int64_t first = 0; // the first unit of part p
  while (p < count && begin >= first + ceilDiv(parts[p].a.rows, kDownUnitRows))
    first += ceilDiv(parts[p++].a.rows, kDownUnitRows);
  for (int64_t u = begin; u < end && p < count;) {
    const LoraDown &d = parts[p];
    const int64_t partUnits = ceilDiv(d.a.rows, kDownUnitRows);
    const int64_t stop = end < first + partUnits ? end : first + partUnits;
    const int64_t i0 = (u - first) * kDownUnitRows;
    int64_t i1 = (stop - first) * kDownUnitRows;
    i1 = i1 < d.a.rows ? i1 : d.a.rows;
    isa.down(x, M, ldx, d.a, i0, i1, t + d.tCol, ldt);
    u = stop;
    first += partUnits;
    ++p;
  }
}

} // namespace

void loraDownOn(KernelIsa path, const float *x, int64_t M, int64_t ldx,
                float *t, int64_t ldt, const LoraDown *parts, size_t count,
                fm::rt::ThreadPool *pool) {
  const LoraIsa &isa = isaTable(path);
  if (M <= 0)
    return;
  int64_t work = 0;
  for (size_t p = 0; p < count; ++p)
    work += M * parts[p].a.rows * parts[p].a.cols;
  const int64_t units = loraDownUnits(parts, count);
  auto body = [&](int64_t begin, int64_t end) {
    downUnitRange(isa, x, M, ldx, t, ldt, parts, count, begin, end);
  };
  if (parallel(pool, work))
    pool->parallelFor(units, body);
  else
    body(0, units);
}

int64_t loraDownUnits(const LoraDown *parts, size_t count) {
  int64_t units = 0;
  for (size_t p = 0; p < count; ++p)
    units += ceilDiv(parts[p].a.rows, kDownUnitRows);
  return units;
}

void loraDownRange(const float *x, int64_t M, int64_t ldx, float *t,
                   int64_t ldt, const LoraDown *parts, size_t count,
                   int64_t u0, int64_t u1) {
  if (M > 0 && u0 < u1)
    downUnitRange(isaTable(bestPath()), x, M, ldx, t, ldt, parts, count, u0,
                  u1);
}

void loraUpColumns(const float *t, int64_t M, int64_t ldt, int64_t ldy,
                   const LoraUp &part, int64_t n0, int64_t n1) {
  if (M > 0 && n0 < n1)
    isaTable(bestPath()).up(t + part.tCol, M, ldt, part.bt, n0, n1,
                            part.scale, part.y, ldy);
}

void loraUpOn(KernelIsa path, const float *t, int64_t M, int64_t ldt,
              int64_t ldy, const LoraUp *parts, size_t count,
              fm::rt::ThreadPool *pool) {
  const LoraIsa &isa = isaTable(path);
  if (M <= 0)
    return;
  using detail::kLoraUpUnit;
  // A run of consecutive parts with one y (the adapters on one projection)
  // is one range of units: each unit runs the run's parts in turn, so no
  // two threads add to one element of y.
  auto runEnd = [&](size_t p) {
    size_t q = p + 1;
    while (q < count && parts[q].y == parts[p].y)
      ++q;
    return q;
  };
  int64_t units = 0, work = 0;
  for (size_t p = 0; p < count; p = runEnd(p))
    units += ceilDiv(parts[p].bt.cols, kLoraUpUnit);
  for (size_t p = 0; p < count; ++p)
    work += M * parts[p].bt.rows * parts[p].bt.cols;
  auto body = [&](int64_t begin, int64_t end) {
    size_t p = 0;
    int64_t first = 0; // the first unit of the run starting at p
    while (p < count && begin >= first + ceilDiv(parts[p].bt.cols, kLoraUpUnit)) {
      first += ceilDiv(parts[p].bt.cols, kLoraUpUnit);
      p = runEnd(p);
    }
    for (int64_t u = begin; u < end && p < count;) {
      const size_t q = runEnd(p);
      const int64_t cols = parts[p].bt.cols;
      const int64_t runUnits = ceilDiv(cols, kLoraUpUnit);
      const int64_t stop = end < first + runUnits ? end : first + runUnits;
      const int64_t n0 = (u - first) * kLoraUpUnit;
      int64_t n1 = (stop - first) * kLoraUpUnit;
      n1 = n1 < cols ? n1 : cols;
      for (size_t r = p; r < q; ++r)
        isa.up(t + parts[r].tCol, M, ldt, parts[r].bt, n0, n1, parts[r].scale,
               parts[r].y, ldy);
      u = stop;
      first += runUnits;
      p = q;
    }
  };
  if (parallel(pool, work))
    pool->parallelFor(units, body);
  else
    body(0, units);
}

void loraDown(const float *x, int64_t M, int64_t ldx, float *t, int64_t ldt,
              const LoraDown *parts, size_t count, fm::rt::ThreadPool *pool) {
  loraDownOn(bestPath(), x, M, ldx, t, ldt, parts, count, pool);
}

void loraUp(const float *t, int64_t M, int64_t ldt, int64_t ldy,
            const LoraUp *parts, size_t count, fm::rt::ThreadPool *pool) {
  loraUpOn(bestPath(), t, M, ldt, ldy, parts, count, pool);
}

const char *loraPathName() { return kernelIsaName(bestPath()); }

} // namespace fm::kernels
