// LayerNorm and activation entry points: check the arguments, pick the
// instruction-set path and split rows (elements) across the thread pool.
#include "kernels/pointwise.h"

#include "kernels/pointwise_impl.h"
#include "base/ThreadPool.h"

#include <cassert>

namespace fm::kernels {
namespace detail {
namespace {

struct GenericTag {
  // Two SSE registers of partial sums on baseline x86-64 (NEON on AArch64).
  static constexpr int kLanes = 8;
};

} // namespace

const PointwiseIsa kPointwiseGeneric = PointwiseKernel<GenericTag>::table();

} // namespace detail

namespace {

// Below this many elements a call runs on the calling thread.
constexpr int64_t kMinParallelElements = 1 << 14;

const detail::PointwiseIsa &isaTable(KernelIsa isa) {
  assert(kernelIsaAvailable(isa) && "pointwise path not available");
#if defined(FM_KERNELS_X86)
  if (isa == KernelIsa::Avx512 && kernelIsaAvailable(isa))
    return detail::kPointwiseAvx512;
  if (isa == KernelIsa::Avx2 && kernelIsaAvailable(isa))
    return detail::kPointwiseAvx2;
#endif
  (void)isa;
  return detail::kPointwiseGeneric;
}

KernelIsa dispatched() {
  static const KernelIsa isa =
      kernelIsaBest() == KernelIsa::Neon ? KernelIsa::Generic : kernelIsaBest();
  return isa;
}

} // namespace

const char *activationName(Activation act) {
  switch (act) {
  case Activation::Gelu:
    return "gelu";
  case Activation::GeluTanh:
    return "gelu_tanh";
  case Activation::QuickGelu:
    return "quick_gelu";
  }
  return "unknown";
}

void layerNormOn(KernelIsa isa, const float *x, int64_t rows, int64_t C,
                 const float *weight, const float *bias, float eps, float *y,
                 fm::rt::ThreadPool *pool) {
  assert(x && weight && bias && y && C > 0 && "layerNorm: bad arguments");
  if (rows <= 0)
    return;
  const detail::PointwiseIsa &t = isaTable(isa);
  auto body = [&](int64_t begin, int64_t end) {
    t.layerNormRows(x, begin, end, C, weight, bias, eps, y);
  };
  if (pool && pool->numThreads() > 1 && rows > 1 &&
      rows * C >= kMinParallelElements)
    pool->parallelFor(rows, body);
  else
    body(0, rows);
}

void activateOn(KernelIsa isa, Activation act, float *x, int64_t n,
                fm::rt::ThreadPool *pool) {
  assert(x && "activate: null buffer");
  if (n <= 0)
    return;
  const detail::PointwiseIsa &t = isaTable(isa);
  // Chunks of whole cache lines, so that threads never share one.
  constexpr int64_t kUnit = 16;
  const int64_t units = (n + kUnit - 1) / kUnit;
  auto body = [&](int64_t begin, int64_t end) {
    t.activate(act, x, begin * kUnit, end * kUnit < n ? end * kUnit : n);
  };
  if (pool && pool->numThreads() > 1 && n >= kMinParallelElements)
    pool->parallelFor(units, body);
  else
    body(0, units);
}

void layerNorm(const float *x, int64_t rows, int64_t C, const float *weight,
               const float *bias, float eps, float *y,
               fm::rt::ThreadPool *pool) {
  layerNormOn(dispatched(), x, rows, C, weight, bias, eps, y, pool);
}

void activate(Activation act, float *x, int64_t n, fm::rt::ThreadPool *pool) {
  activateOn(dispatched(), act, x, n, pool);
}

} // namespace fm::kernels
