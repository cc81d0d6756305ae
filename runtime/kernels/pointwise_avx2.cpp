// LayerNorm and the GELU family compiled for AVX2 + FMA (-mavx2 -mfma
// -mf16c): 16 lanes of partial sums, two ymm registers.
#include "kernels/pointwise_impl.h"

namespace fm::kernels::detail {
namespace {

struct Avx2Tag {
  static constexpr int kLanes = 16;
};

} // namespace

const PointwiseIsa kPointwiseAvx2 = PointwiseKernel<Avx2Tag>::table();

} // namespace fm::kernels::detail
