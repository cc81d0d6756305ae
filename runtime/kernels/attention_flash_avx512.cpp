// The blocked attention compiled for AVX-512 (-mavx512f -mavx512bw
// -mavx512vl -mprefer-vector-width=512), its hot loops on simd_avx512.h.
#include "kernels/attention_flash_impl.h"
#include "kernels/simd_avx512.h"

namespace fm::kernels::detail {
namespace {

struct FlashAvx512Tag {
  static constexpr int kLanes = 16;
  static constexpr bool kSimd = true;
  using Simd = avx512::Simd;
};

} // namespace

void attentionFlashRangeAvx512(const AttentionArgs &args, int64_t begin,
                               int64_t end) {
  FlashAttention<FlashAvx512Tag>::range(args, begin, end);
}

} // namespace fm::kernels::detail
