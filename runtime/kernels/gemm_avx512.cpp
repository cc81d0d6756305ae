// The packed GEMM for AVX-512 (-mavx512f -mavx512bw -mavx512vl): a 14 x 32
// register tile (28 accumulators, 2 vectors of w; x is broadcast from
// memory straight into the FMAs).
#include "kernels/gemm_impl.h"
#include "kernels/simd_avx512.h"

namespace fm::kernels::detail {
namespace avx512 {
namespace {

struct GemmV : Simd {
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  // 14 x 2 accumulators + 2 w vectors = 30 of the 32 zmm registers: 16
  // loads per 28 FMAs.
  static constexpr int kMR = 14, kNV = 2;
  // A w panel (256 x 32 floats = 32 KiB) stays in the 48 KiB L1 while the
  // tile walks a 252 x 256 block of x (252 KiB, in L2).
  static constexpr int64_t kKC = 256, kMC = 252, kNC = 2048;
};

} // namespace
} // namespace avx512

const GemmIsa kGemmAvx512 = Gemm<avx512::GemmV>::table();

} // namespace fm::kernels::detail
