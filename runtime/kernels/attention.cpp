// Attention entry point: checks the arguments, picks the instruction-set
// path and splits (row, head) pairs across the thread pool.
#include "kernels/attention.h"

#include "kernels/attention_impl.h"
#include "kernels/attention_isa.h"
#include "base/ThreadPool.h"

#include <cassert>

namespace fm::kernels {
namespace {

struct GenericTag {
  // Two SSE registers per partial sum on baseline x86-64; four keys' sums
  // take half of the 16 registers.
  static constexpr int kLanes = 8;
  static constexpr bool kSimd = false;
};

// Below this many multiply-adds a call runs on the calling thread.
constexpr int64_t kMinParallelWork = 1 << 16;

detail::AttentionRangeFn rangeFor(KernelIsa isa) {
  assert(kernelIsaAvailable(isa) && "attention path not available");
#if defined(FM_KERNELS_X86)
  if (isa == KernelIsa::Avx512 && kernelIsaAvailable(isa))
    return &detail::attentionRangeAvx512;
  if (isa == KernelIsa::Avx2 && kernelIsaAvailable(isa))
    return &detail::attentionRangeAvx2;
#endif
  // AArch64 compiles the generic source with NEON as its baseline.
  return &detail::AttentionKernel<GenericTag>::range;
}

} // namespace

namespace detail {

void runAttentionItems(const AttentionArgs &a, int64_t items,
                       AttentionRangeFn range, fm::rt::ThreadPool *pool) {
  assert(a.q && a.k && a.v && a.out && "attention: null buffer");
  assert(a.S >= 0 && a.pos0 >= 0 && a.D > 0 && a.window >= 0);
  assert(a.KVH > 0 && a.H % a.KVH == 0 && "attention: H % KVH != 0");
  assert(a.pos0 + a.S <= a.capacity && "attention: past the cache capacity");
  if (a.S <= 0 || a.H <= 0)
    return;
  int64_t keysPerRow = a.pos0 + a.S;
  if (a.window > 0 && a.window < keysPerRow)
    keysPerRow = a.window;
  const int64_t work = a.S * a.H * keysPerRow * a.D;
  auto body = [&](int64_t begin, int64_t end) { range(a, begin, end); };
  if (pool && pool->numThreads() > 1 && work >= kMinParallelWork)
    pool->parallelFor(items, body);
  else
    body(0, items);
}

KernelIsa attentionIsaBest() {
  static const KernelIsa isa =
      kernelIsaBest() == KernelIsa::Neon ? KernelIsa::Generic : kernelIsaBest();
  return isa;
}

} // namespace detail

void attentionOn(KernelIsa isa, const AttentionArgs &a,
                 fm::rt::ThreadPool *pool) {
  detail::runAttentionItems(a, a.S * a.H, rangeFor(isa), pool);
}

void attention(const AttentionArgs &a, fm::rt::ThreadPool *pool) {
  attentionOn(detail::attentionIsaBest(), a, pool);
}

} // namespace fm::kernels
