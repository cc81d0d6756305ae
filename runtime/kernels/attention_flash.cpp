// Blocked attention entry point: picks the instruction-set path; the checks
// and the split of (query block, KV head) items across the thread pool are
// attention.cpp's (detail::runAttentionItems).
#include "kernels/attention_flash.h"

#include "kernels/attention_flash_impl.h"
#include "kernels/attention_isa.h"

#include <cassert>

namespace fm::kernels {
namespace {

struct FlashGenericTag {
  static constexpr int kLanes = 8;
  static constexpr bool kSimd = false;
};

detail::AttentionRangeFn rangeFor(KernelIsa isa) {
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
  // (query block, KV head) items: the same count on every path.
  detail::runAttentionItems(
      a, a.S > 0 && a.H > 0 && a.KVH > 0 ? detail::FlashAttention<FlashGenericTag>::items(a)
                            : 0,
      rangeFor(isa), pool);
}

void attentionBlocked(const AttentionArgs &a, fm::rt::ThreadPool *pool) {
  attentionBlockedOn(detail::attentionIsaBest(), a, pool);
}

} // namespace fm::kernels
