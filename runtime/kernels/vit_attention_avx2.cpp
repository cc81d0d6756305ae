// The ViT attention kernel compiled for AVX2 + FMA (-mavx2 -mfma -mf16c):
// 6 x 2-vector register tiles (12 accumulators of the 16 ymm registers).
#include "kernels/simd_avx2.h"
#include "kernels/vit_attention_impl.h"

namespace fm::kernels::detail {
namespace {

struct Avx2Tag {
  static constexpr int kLanes = 16;
  static constexpr int kMR = 6, kNVMax = 2;
  using Simd = avx2::Simd;
};

} // namespace

const VitRangeFn kVitAttentionAvx2 = &VitAttentionKernel<Avx2Tag>::range;

} // namespace fm::kernels::detail
