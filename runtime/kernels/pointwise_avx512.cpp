// LayerNorm and the GELU family compiled for AVX-512 (-mavx512f -mavx512bw
// -mavx512vl -mprefer-vector-width=512): 16 lanes of partial sums.
#include "kernels/pointwise_impl.h"

namespace fm::kernels::detail {
namespace {

struct Avx512Tag {
  static constexpr int kLanes = 16;
};

} // namespace

const PointwiseIsa kPointwiseAvx512 = PointwiseKernel<Avx512Tag>::table();

} // namespace fm::kernels::detail
