// The packed GEMM for AVX2 + FMA (-mavx2 -mfma -mf16c): a 6 x 16 register
// tile (12 accumulators, 2 vectors of w, one broadcast of x: 15 of the 16
// ymm registers), as BLIS's Haswell sgemm.
#include "kernels/gemm_impl.h"
#include "kernels/simd_avx2.h"

namespace fm::kernels::detail {
namespace avx2 {
namespace {

struct GemmV : Simd {
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static constexpr int kMR = 6, kNV = 2;
  // A w panel of 256 x 16 floats (16 KiB) in L1; x blocks of 252 rows.
  static constexpr int64_t kKC = 256, kMC = 252, kNC = 2048;
};

} // namespace
} // namespace avx2

const GemmIsa kGemmAvx2 = Gemm<avx2::GemmV>::table();

} // namespace fm::kernels::detail
