// The attention kernel compiled for AVX2 + FMA (-mavx2 -mfma -mf16c), its
// hot loops on simd_avx2.h.
#include "kernels/attention_impl.h"
#include "kernels/attention_isa.h"
#include "kernels/simd_avx2.h"

namespace fm::kernels::detail {
namespace {

struct Avx2Tag {
  static constexpr int kLanes = 16;
  static constexpr bool kSimd = true;
  using Simd = avx2::Simd;
};

} // namespace

void attentionRangeAvx2(const AttentionArgs &args, int64_t begin, int64_t end) {
  AttentionKernel<Avx2Tag>::range(args, begin, end);
}

} // namespace fm::kernels::detail
