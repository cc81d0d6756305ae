// The blocked attention compiled for AVX2 (-mavx2 -mfma -mf16c), its hot
// loops on simd_avx2.h.
#include "kernels/attention_flash_impl.h"
#include "kernels/simd_avx2.h"

namespace fm::kernels::detail {
namespace {

struct FlashAvx2Tag {
  static constexpr int kLanes = 8;
  static constexpr bool kSimd = true;
  using Simd = avx2::Simd;
};

} // namespace

void attentionFlashRangeAvx2(const AttentionArgs &args, int64_t begin,
                             int64_t end) {
  FlashAttention<FlashAvx2Tag>::range(args, begin, end);
}

} // namespace fm::kernels::detail
