// Blocked attention entry point: checks the arguments, picks the
// instruction-set path and splits (query block, KV head) items across the
// thread pool.
#include "kernels/attention_flash.h"

#include "kernels/attention_flash_impl.h"
#include "base/ThreadPool.h"

#include <cassert>

namespace fm::kernels {
namespace {

struct FlashGenericTag {
  static constexpr int kLanes = 8;
  static constexpr bool kSimd = false;
};

// Below this many multiply-adds a call runs on the calling thread.
constexpr int64_t kMinParallelWork = 1 << 16;

using RangeFn = void (*)(const AttentionArgs &, int64_t, int64_t);

RangeFn rangeFor(KernelIsa isa) {
  assert(kernelIsaAvailable(isa) && "attention path not available");
#if defined(FM_KERNELS_X86)
  if (isa == KernelIsa::Avx512 && kernelIsaAvailable(isa))
    return &detail::attentionFlashRangeAvx512;
  if (isa == KernelIsa::Avx2 && kernelIsaAvailable(isa))
    return &detail::attentionFlashRangeAvx2;
#endif
  return &detail::FlashAttention<FlashGenericTag>::range;
}

} // namespace

void attentionBlockedOn(KernelIsa isa, const AttentionArgs &a,
                        fm::rt::ThreadPool *pool) {
  assert(a.q && a.k && a.v && a.out && "attention: null buffer");
  assert(a.S >= 0 && a.pos0 >= 0 && a.D > 0 && a.window >= 0);
  assert(a.KVH > 0 && a.H % a.KVH == 0 && "attention: H % KVH != 0");
  assert(a.pos0 + a.S <= a.capacity && "attention: past the cache capacity");
  if (a.S <= 0 || a.H <= 0)
    return;
  const RangeFn range = rangeFor(isa);
  const int64_t items =
      detail::FlashAttention<FlashGenericTag>::items(a); // same on every path
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

void attentionBlocked(const AttentionArgs &a, fm::rt::ThreadPool *pool) {
  static const KernelIsa isa =
      kernelIsaBest() == KernelIsa::Neon ? KernelIsa::Generic : kernelIsaBest();
  attentionBlockedOn(isa, a, pool);
}

} // namespace fm::kernels
