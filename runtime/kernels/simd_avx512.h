// Internal: AVX-512 vector primitives (16 floats per register) for files
// built with -mavx512f -mavx512bw -mavx512vl. Include only from such files,
// all with the same instruction-set flags.
#pragma once

#include <cstdint>

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics fill their unused pass-through operand with
// `__m256d __Y = __Y;`, which -Wuninitialized reports at each inlined use
// (even of _mm512_castps512_ps256). The warnings point into the header, so
// silencing them around the include is enough.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

namespace fm::kernels::detail::avx512 {

struct Simd {
  using Reg = __m512;
  static constexpr int kLanes = 16;

  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg broadcast(float v) { return _mm512_set1_ps(v); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg load(const float *p) { return _mm512_loadu_ps(p); }
  static Reg load(const uint16_t *p) {
    return _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  }
  static Reg load(const int8_t *p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(p))));
  }
  static void store(float *p, Reg v) { _mm512_storeu_ps(p, v); }

  // n < kLanes elements, the rest zero. Masked-off lanes are neither read
  // nor able to fault.
  static __mmask16 mask(int n) {
    return static_cast<__mmask16>((1u << n) - 1u);
  }
  static Reg loadPartial(const float *p, int n) {
    return _mm512_maskz_loadu_ps(mask(n), p);
  }
  static Reg loadPartial(const uint16_t *p, int n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(n), p));
  }
  static Reg loadPartial(const int8_t *p, int n) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mask(n), p)));
  }
  static void storePartial(float *p, Reg v, int n) {
    _mm512_mask_storeu_ps(p, mask(n), v);
  }

  static float sum(Reg a) { return _mm512_reduce_add_ps(a); }
  /// out[i] = horizontal sum of r[i], i < 4.
  static void sum4(const Reg *r, float *out) {
    // Within each 128-bit lane: [r0, r1, r0, r1] then [r0, r1, r2, r3]
    // partial sums; then fold the four lanes.
    __m512 t0 = _mm512_add_ps(_mm512_unpacklo_ps(r[0], r[1]),
                              _mm512_unpackhi_ps(r[0], r[1]));
    __m512 t1 = _mm512_add_ps(_mm512_unpacklo_ps(r[2], r[3]),
                              _mm512_unpackhi_ps(r[2], r[3]));
    __m512 u =
        _mm512_add_ps(_mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0)),
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

} // namespace fm::kernels::detail::avx512
