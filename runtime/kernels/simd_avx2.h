// Internal: AVX2 vector primitives (8 floats per register) for files built
// with -mavx2 -mfma -mf16c. Include only from such files, all with the same
// flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace fm::kernels::detail::avx2 {

struct Simd {
  using Reg = __m256;
  static constexpr int kLanes = 8;

  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg broadcast(float v) { return _mm256_set1_ps(v); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg load(const float *p) { return _mm256_loadu_ps(p); }
  static Reg load(const uint16_t *p) {
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  }
  static Reg loadPartial(const uint16_t *p, int n) {
    // No masked 16-bit load in AVX2: bounce through a zeroed buffer.
    uint16_t buffer[8] = {};
    std::memcpy(buffer, p, static_cast<size_t>(n) * sizeof(uint16_t));
    return load(buffer);
  }
  static Reg load(const int8_t *p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(p))));
  }
  static void store(float *p, Reg v) { _mm256_storeu_ps(p, v); }

  static __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // n < kLanes elements, the rest zero. Masked-off lanes of vmaskmovps are
  // neither read nor able to fault.
  static Reg loadPartial(const float *p, int n) {
    return _mm256_maskload_ps(p, mask(n));
  }
  static Reg loadPartial(const int8_t *p, int n) {
    int8_t buffer[8] = {};
    std::memcpy(buffer, p, static_cast<size_t>(n));
    return load(buffer);
  }
  static void storePartial(float *p, Reg v, int n) {
    _mm256_maskstore_ps(p, mask(n), v);
  }

  static float sum(Reg a) {
    __m128 s =
        _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  /// out[i] = horizontal sum of r[i], i < 4.
  static void sum4(const Reg *r, float *out) {
    // Per 128-bit half: [r0, r1, r2, r3] partial sums; then fold the halves.
    __m256 t =
        _mm256_hadd_ps(_mm256_hadd_ps(r[0], r[1]), _mm256_hadd_ps(r[2], r[3]));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(t),
                                  _mm256_extractf128_ps(t, 1)));
  }
  static void prefetch(const void *p) {
    _mm_prefetch(static_cast<const char *>(p), _MM_HINT_T0);
  }
};

} // namespace fm::kernels::detail::avx2
