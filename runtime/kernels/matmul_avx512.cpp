// AVX-512 matmul/matvec (built with -mavx512f -mavx512bw -mavx512vl): 16
// floats per register, f16 weights widened with vcvtph2ps.
#include "kernels/matmul_isa.h"
#include "kernels/matmul_tiles.h"

#include <immintrin.h>

namespace fm::kernels::detail {
namespace avx512 {

struct V {
  using Reg = __m512;
  static constexpr int kLanes = 16;
  // 16 accumulators + 4 rows of x + 1 of w out of 32 registers.
  static constexpr int kMR = 4, kNR = 4;
  // 4 rows of w x 512 floats = 8 KiB of L1.
  static constexpr int64_t kKC = 512;
  static constexpr int kMatvecRows = 8;
  static constexpr int kPrefetchBytes = 0;

  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg load(const float *p) { return _mm512_loadu_ps(p); }
  static Reg load(const uint16_t *p) {
    return _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  }
  static __mmask16 mask(int n) {
    return static_cast<__mmask16>((1u << n) - 1u);
  }
  // Masked-off lanes are neither read nor able to fault.
  static Reg loadPartial(const float *p, int n) {
    return _mm512_maskz_loadu_ps(mask(n), p);
  }
  static Reg loadPartial(const uint16_t *p, int n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(n), p));
  }
  static float sum(Reg a) { return _mm512_reduce_add_ps(a); }
  static void sum4(const Reg *r, float *out) {
    // Within each 128-bit lane: [r0, r1, r0, r1] then [r0, r1, r2, r3]
    // partial sums, then fold the four lanes.
    __m512 t0 = _mm512_add_ps(_mm512_unpacklo_ps(r[0], r[1]),
                              _mm512_unpackhi_ps(r[0], r[1]));
    __m512 t1 = _mm512_add_ps(_mm512_unpacklo_ps(r[2], r[3]),
                              _mm512_unpackhi_ps(r[2], r[3]));
    __m512 u = _mm512_add_ps(_mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 2, 3, 2)));
    __m256 h = _mm256_add_ps(
        _mm512_castps512_ps256(u),
        _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(u), 1)));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h),
                                  _mm256_extractf128_ps(h, 1)));
  }
  static void prefetch(const void *p) {
    _mm_prefetch(static_cast<const char *>(p), _MM_HINT_T0);
  }
};

} // namespace avx512

const MatmulIsa kMatmulAvx512 = {&matmulRange<avx512::V, float>,
                                 &matmulRange<avx512::V, uint16_t>};

} // namespace fm::kernels::detail
