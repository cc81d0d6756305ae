// Internal: the one-candidate parts of the quantizer's search (the refit and
// the final quants) with 8-lane AVX intrinsics: lane l holds k mod 8, the
// kSumLanes partial sums of quantize_search.h, so results match the generic
// path bit for bit. Included by quantize_avx2.cpp and quantize_avx512.cpp
// (both built with AVX2 and -ffp-contract=off); the auto-vectorizer turned
// these loops into shuffles.
#pragma once

#include "kernels/quantize_search.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics trip -Wuninitialized inside the header (see
// simd_avx512.h): silenced around the include.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

namespace fm::kernels::qsearch::x86 {
// Internal linkage: the AVX2 and AVX-512 files each keep their own copies
// (a shared weak copy could be the AVX-512 one on an AVX2-only CPU).
namespace {

static_assert(kSumLanes == 8, "one ymm of partial sums");

// round(clamp(v, 0, qmax)) as (float)(int)(v + 0.5f); maxps(v, 0) maps NaN
// to 0 as the generic v > 0 ? v : 0 does.
inline __m256 quant8(__m256 v, __m256 qmax) {
  v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), qmax);
  return _mm256_cvtepi32_ps(
      _mm256_cvttps_epi32(_mm256_add_ps(v, _mm256_set1_ps(0.5f))));
}

inline float laneSum(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float s = 0.0f;
  for (float x : lanes)
    s += x;
  return s;
}

inline double laneSum(__m256d lo, __m256d hi) {
  alignas(32) double lanes[8];
  _mm256_store_pd(lanes, lo);
  _mm256_store_pd(lanes + 4, hi);
  double s = 0.0;
  for (double x : lanes)
    s += x;
  return s;
}

inline float balancedRefit(const Group &g, float s) {
  const __m256 inv = _mm256_set1_ps(1.0f / s), c = _mm256_set1_ps(g.center),
               qmax = _mm256_set1_ps(g.qmax);
  __m256 num = _mm256_setzero_ps(), den = _mm256_setzero_ps();
  for (int k = 0; k < g.n; k += 8) {
    const __m256 w = _mm256_loadu_ps(g.w + k);
    const __m256 lv =
        _mm256_sub_ps(quant8(_mm256_add_ps(_mm256_mul_ps(w, inv), c), qmax), c);
    num = _mm256_add_ps(num, _mm256_mul_ps(w, lv));
    den = _mm256_add_ps(den, _mm256_mul_ps(lv, lv));
  }
  const float d = laneSum(den);
  return d > 0.0f ? laneSum(num) / d : s;
}

inline void finish(const Group &g, bool affine, float s, float m, uint8_t *q,
                   double *sqError, double *sqSum) {
  const bool any = s > 0.0f;
  const __m256 inv = _mm256_set1_ps(any ? 1.0f / s : 0.0f),
               sv = _mm256_set1_ps(s), mv = _mm256_set1_ps(m),
               c = _mm256_set1_ps(g.center), qmax = _mm256_set1_ps(g.qmax),
               zeroQuant =
                   _mm256_set1_ps(affine ? 0.0f : (g.qmax + 1.0f) * 0.5f);
  __m256d errLo = _mm256_setzero_pd(), errHi = _mm256_setzero_pd(),
          sqLo = _mm256_setzero_pd(), sqHi = _mm256_setzero_pd();
  for (int k = 0; k < g.n; k += 8) {
    const __m256 w = _mm256_loadu_ps(g.w + k);
    __m256 qf, value;
    if (affine) {
      qf = any ? quant8(_mm256_mul_ps(_mm256_sub_ps(w, mv), inv), qmax)
               : zeroQuant;
      value = _mm256_add_ps(_mm256_mul_ps(qf, sv), mv);
    } else {
      qf = any ? quant8(_mm256_add_ps(_mm256_mul_ps(w, inv), c), qmax)
               : zeroQuant;
      value = _mm256_mul_ps(_mm256_sub_ps(qf, c), sv);
    }
    // The 8 quants (0..255) as bytes.
    const __m256i qi = _mm256_cvttps_epi32(qf);
    const __m128i q16 = _mm_packus_epi32(_mm256_castsi256_si128(qi),
                                         _mm256_extracti128_si256(qi, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i *>(q + k),
                     _mm_packus_epi16(q16, q16));
    const __m256d wLo = _mm256_cvtps_pd(_mm256_castps256_ps128(w)),
                  wHi = _mm256_cvtps_pd(_mm256_extractf128_ps(w, 1));
    const __m256d dLo = _mm256_sub_pd(
        wLo, _mm256_cvtps_pd(_mm256_castps256_ps128(value)));
    const __m256d dHi =
        _mm256_sub_pd(wHi, _mm256_cvtps_pd(_mm256_extractf128_ps(value, 1)));
    errLo = _mm256_add_pd(errLo, _mm256_mul_pd(dLo, dLo));
    errHi = _mm256_add_pd(errHi, _mm256_mul_pd(dHi, dHi));
    sqLo = _mm256_add_pd(sqLo, _mm256_mul_pd(wLo, wLo));
    sqHi = _mm256_add_pd(sqHi, _mm256_mul_pd(wHi, wHi));
  }
  *sqError = laneSum(errLo, errHi);
  *sqSum = laneSum(sqLo, sqHi);
}

#if defined(__AVX512F__)
inline __m256 upper8(__m512 v) { // AVX512F (extractf32x8 would need DQ)
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

// One candidate with 16 weights in the lanes: lanes 0-7 and 8-15 hold k and
// k + 8, added to the 8 partial sums one after the other (the order of
// kSumLanes). Cheaper than a 16-candidate batch for fewer than ~12.
inline float balancedError16(const Group &g, float s) {
  if (!(s > 0.0f))
    return g.sqSum;
  const __m512 inv = _mm512_set1_ps(1.0f / s), sv = _mm512_set1_ps(s),
               c = _mm512_set1_ps(g.center), qmax = _mm512_set1_ps(g.qmax),
               half = _mm512_set1_ps(0.5f), zero = _mm512_setzero_ps();
  __m256 acc = _mm256_setzero_ps();
  for (int k = 0; k < g.n; k += 16) {
    const __m512 w = _mm512_loadu_ps(g.w + k);
    __m512 v = _mm512_add_ps(_mm512_mul_ps(w, inv), c);
    v = _mm512_min_ps(_mm512_max_ps(v, zero), qmax);
    const __m512 q = _mm512_roundscale_ps(_mm512_add_ps(v, half),
                                          _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 d = _mm512_sub_ps(w, _mm512_mul_ps(_mm512_sub_ps(q, c), sv));
    const __m512 d2 = _mm512_mul_ps(d, d);
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(d2));
    acc = _mm256_add_ps(acc, upper8(d2));
  }
  return laneSum(acc);
}

inline float affineError16(const Group &g, float s, float m) {
  const __m512 inv = _mm512_set1_ps(s > 0.0f ? 1.0f / s : 0.0f),
               sv = _mm512_set1_ps(s), mv = _mm512_set1_ps(m),
               qmax = _mm512_set1_ps(g.qmax), half = _mm512_set1_ps(0.5f),
               zero = _mm512_setzero_ps();
  __m256 acc = _mm256_setzero_ps();
  for (int k = 0; k < g.n; k += 16) {
    const __m512 w = _mm512_loadu_ps(g.w + k);
    __m512 v = _mm512_mul_ps(_mm512_sub_ps(w, mv), inv);
    v = _mm512_min_ps(_mm512_max_ps(v, zero), qmax);
    const __m512 q = _mm512_roundscale_ps(_mm512_add_ps(v, half),
                                          _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 d = _mm512_sub_ps(w, _mm512_add_ps(_mm512_mul_ps(q, sv), mv));
    const __m512 d2 = _mm512_mul_ps(d, d);
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(d2));
    acc = _mm256_add_ps(acc, upper8(d2));
  }
  return laneSum(acc);
}
#endif

} // namespace
} // namespace fm::kernels::qsearch::x86
