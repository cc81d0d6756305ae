// AVX2 qmatmul (built with -mavx2 -mfma -mf16c): int8 activations, 32
// quant bytes per step, vpmaddubsw (u8 quants x s8 activations, the planes
// summed in int16) then vpmaddwd into int32 lanes. Also the AVX-512 path on
// CPUs without VNNI.
#include "kernels/qmatmul_impl.h"

#include <immintrin.h>

namespace fm::kernels::qdetail {
namespace avx2 {
namespace {

struct V {
  using Q = __m256i;
  using I = __m256i;
  using F = __m256;
  static constexpr int kBytes = 32, kLanes = 8;
  // vpmaddubsw saturates int16: 255 * 127 * 2 does not fit, so 8-bit
  // quants are made signed and the sign moved onto x (|q - 128| <= 128).
  static constexpr int kOffset8 = 128;
  static constexpr const char *kName = "avx2";
  // The multi-row matvec's rows per pass over a w row: 4 accumulators,
  // so that the 16 registers hold them beside the planes and the chains.
  static constexpr int kMatvecPassRows = 4;

  static Q loadW(const uint8_t *p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
  }
  static Q loadWPartial(const uint8_t *p, int n) {
    alignas(32) uint8_t buffer[32] = {};
    std::memcpy(buffer, p, static_cast<size_t>(n));
    return _mm256_load_si256(reinterpret_cast<const __m256i *>(buffer));
  }
  template <int Bits, int J> static Q plane(Q w) {
    if constexpr (Bits == 8) {
      return _mm256_xor_si256(w, _mm256_set1_epi8(static_cast<char>(0x80)));
    } else {
      const I mask = _mm256_set1_epi8(static_cast<char>((1 << Bits) - 1));
      if constexpr (J == 0)
        return _mm256_and_si256(w, mask);
      else
        return _mm256_and_si256(_mm256_srli_epi16(w, Bits * J), mask);
    }
  }
  static I loadX(const int8_t *x) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x));
  }
  static I izero() { return _mm256_setzero_si256(); }
  static I shl8(I v) { return _mm256_slli_epi32(v, 8); }
  static I iadd(I a, I b) { return _mm256_add_epi32(a, b); }
  template <int Bits> static I dot(I acc, const Q *planes, const int8_t *x) {
    I pairs;
    if constexpr (Bits == 8) {
      I xv = loadX(x);
      pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(planes[0], planes[0]),
                                   _mm256_sign_epi8(xv, planes[0]));
    } else {
      // Sums of pairs of products stay below 2 * 4 * 3 * 127 (2 bits) and
      // 2 * 2 * 15 * 127 (4 bits): the planes add up in int16.
      pairs = _mm256_add_epi16(_mm256_maddubs_epi16(planes[0], loadX(x)),
                               _mm256_maddubs_epi16(planes[1], loadX(x + 64)));
      if constexpr (Bits == 2)
        pairs = _mm256_add_epi16(
            pairs,
            _mm256_add_epi16(_mm256_maddubs_epi16(planes[2], loadX(x + 128)),
                             _mm256_maddubs_epi16(planes[3], loadX(x + 192))));
    }
    return _mm256_add_epi32(acc,
                            _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
  static F cvt(I v) { return _mm256_cvtepi32_ps(v); }
  static F load(const float *p) { return _mm256_loadu_ps(p); }
  static F zero() { return _mm256_setzero_ps(); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F fmsub(F a, F b, F c) { return _mm256_fmsub_ps(a, b, c); }
  static float hsum(F v) {
    __m128 s =
        _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  using Spread = __m256i;
  static Spread spread(int lanesPerGroup) {
    alignas(32) int idx[8];
    for (int i = 0; i < 8; ++i)
      idx[i] = i / lanesPerGroup;
    return _mm256_load_si256(reinterpret_cast<const __m256i *>(idx));
  }
  static F scales(const uint8_t *p, int count, Spread s) {
    __m128i h;
    switch (count) {
    case 8:
      h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
      break;
    case 4:
      h = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(p));
      break;
    case 2: {
      int32_t pair;
      std::memcpy(&pair, p, 4);
      h = _mm_cvtsi32_si128(pair);
      break;
    }
    case 1: {
      uint16_t one;
      std::memcpy(&one, p, 2);
      h = _mm_cvtsi32_si128(one);
      break;
    }
    default: {
      uint16_t buffer[8] = {};
      std::memcpy(buffer, p, 2 * static_cast<size_t>(count));
      h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(buffer));
    }
    }
    return _mm256_permutevar8x32_ps(_mm256_cvtph_ps(h), s);
  }
  static float dotHalf(const uint16_t *h, const float *f, int64_t n) {
    F acc = zero();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      acc = fma(_mm256_cvtph_ps(
                    _mm_loadu_si128(reinterpret_cast<const __m128i *>(h + i))),
                _mm256_loadu_ps(f + i), acc);
    float sum = hsum(acc);
    for (; i < n; ++i)
      sum += _cvtsh_ss(h[i]) * f[i];
    return sum;
  }
  static void prefetchL2(const uint8_t *p) {
    _mm_prefetch(reinterpret_cast<const char *>(p), _MM_HINT_T1);
  }
};

} // namespace
} // namespace avx2

const QMatmulIsa kQMatmulAvx2[2] = {IsaPair<avx2::V>::kTables[0],
                                    IsaPair<avx2::V>::kTables[1]};

} // namespace fm::kernels::qdetail
