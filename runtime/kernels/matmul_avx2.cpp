// AVX2 matmul/matvec (built with -mavx2 -mfma -mf16c): 8 floats per
// register, f16 weights widened with vcvtph2ps.
#include "kernels/matmul_isa.h"
#include "kernels/matmul_tiles.h"
#include "kernels/simd_avx2.h"

namespace fm::kernels::detail {
namespace avx2 {
namespace {

struct V : Simd {
  // 12 accumulators + 3 rows of x + 1 of w fill the 16 registers.
  static constexpr int kMR = 3, kNR = 4;
  // 4 rows of w x 512 floats = 8 KiB of L1.
  static constexpr int64_t kKC = 512;
  static constexpr int kMatvecRows = 8;
  // 8 accumulators of 16 registers: the multi-row matvec takes x row by
  // row (the w rows stay in L1 across them).
  static constexpr int kMatvecPassRows = 1;
  static constexpr int kPrefetchBytes = 0;
};

} // namespace
} // namespace avx2

const MatmulIsa kMatmulAvx2 = {&matmulRange<avx2::V, float>,
                               &matmulRange<avx2::V, uint16_t>};

} // namespace fm::kernels::detail
