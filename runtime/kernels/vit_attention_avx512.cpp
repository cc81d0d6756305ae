// The ViT attention kernel compiled for AVX-512 (-mavx512f -mavx512bw
// -mavx512vl -mprefer-vector-width=512): 6 x 4-vector register tiles (24
// accumulators), its softmax loops 16 wide.
#include "kernels/simd_avx512.h"
#include "kernels/vit_attention_impl.h"

namespace fm::kernels::detail {
namespace {

struct Avx512Tag {
  static constexpr int kLanes = 16;
  static constexpr int kMR = 6, kNVMax = 4;
  using Simd = avx512::Simd;
};

} // namespace

const VitRangeFn kVitAttentionAvx512 = &VitAttentionKernel<Avx512Tag>::range;

} // namespace fm::kernels::detail
