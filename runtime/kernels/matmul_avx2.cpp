// AVX2 matmul/matvec (built with -mavx2 -mfma -mf16c): 8 floats per
// register, f16 weights widened with vcvtph2ps.
#include "kernels/matmul_isa.h"
#include "kernels/matmul_tiles.h"

#include <immintrin.h>

#include <cstring>

namespace fm::kernels::detail {
namespace avx2 {

struct V {
  using Reg = __m256;
  static constexpr int kLanes = 8;
  // 12 accumulators + 3 rows of x + 1 of w fill the 16 registers.
  static constexpr int kMR = 3, kNR = 4;
  // 4 rows of w x 512 floats = 8 KiB of L1.
  static constexpr int64_t kKC = 512;
  static constexpr int kMatvecRows = 8;
  static constexpr int kPrefetchBytes = 0;

  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg load(const float *p) { return _mm256_loadu_ps(p); }
  static Reg load(const uint16_t *p) {
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  }
  // Masked-off lanes of vmaskmovps are neither read nor able to fault.
  static Reg loadPartial(const float *p, int n) {
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
    return _mm256_maskload_ps(p, mask);
  }
  static Reg loadPartial(const uint16_t *p, int n) {
    // No masked 16-bit load in AVX2: bounce through a zeroed buffer.
    uint16_t buffer[8] = {};
    std::memcpy(buffer, p, static_cast<size_t>(n) * sizeof(uint16_t));
    return load(buffer);
  }
  static float sum(Reg a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static void sum4(const Reg *r, float *out) {
    // Per 128-bit half: [r0, r1, r2, r3] partial sums; then fold the halves.
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(r[0], r[1]),
                              _mm256_hadd_ps(r[2], r[3]));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(t),
                                  _mm256_extractf128_ps(t, 1)));
  }
  static void prefetch(const void *p) {
    _mm_prefetch(static_cast<const char *>(p), _MM_HINT_T0);
  }
};

} // namespace avx2

const MatmulIsa kMatmulAvx2 = {&matmulRange<avx2::V, float>,
                               &matmulRange<avx2::V, uint16_t>};

} // namespace fm::kernels::detail
