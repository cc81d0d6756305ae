// AVX-512 matmul/matvec (built with -mavx512f -mavx512bw -mavx512vl): 16
// floats per register, f16 weights widened with vcvtph2ps.
#include "kernels/matmul_isa.h"
#include "kernels/matmul_tiles.h"
#include "kernels/simd_avx512.h"

namespace fm::kernels::detail {
namespace avx512 {
namespace {

struct V : Simd {
  // 24 accumulators + 4 rows of x + 1 of w out of 32 registers: 10 loads
  // per 24 FMAs.
  static constexpr int kMR = 4, kNR = 6;
  // 6 rows of w x 512 floats = 12 KiB of L1.
  static constexpr int64_t kKC = 512;
  // 8 independent FMA chains; 8 rows stream at once.
  static constexpr int kMatvecRows = 8;
  // 3 x 8 accumulators + 3 rows of x + 1 of w: the multi-row matvec.
  static constexpr int kMatvecPassRows = 3;
  // Hardware prefetch keeps up with 8 sequential rows.
  static constexpr int kPrefetchBytes = 0;
};

} // namespace
} // namespace avx512

const MatmulIsa kMatmulAvx512 = {&matmulRange<avx512::V, float>,
                                 &matmulRange<avx512::V, uint16_t>};

} // namespace fm::kernels::detail
