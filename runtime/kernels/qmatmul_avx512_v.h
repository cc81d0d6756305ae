// Internal: the AVX-512 VNNI traits of qmatmul_impl.h, shared by
// qmatmul_avx512.cpp (planes split by shift and mask) and
// qmatmul_avx512_gfni.cpp (built with -mgfni as well: a 2- or 4-bit plane
// other than the lowest is one vgf2p8affineqb instead of a shift and a
// mask). Include only from those two files; each
// instantiates V in its own anonymous namespace, with its own flags.
#pragma once

#include "kernels/gfni_planes.h"
#include "kernels/qmatmul_impl.h"

#include <immintrin.h>

#include <cstdint>

namespace fm::kernels::qdetail::avx512vnni {
namespace {

// Gfni: planes 1.. of 2- and 4-bit quants through vgf2p8affineqb (the CPU
// must have GFNI).
template <bool Gfni> struct V {
  using Q = __m512i;
  using I = __m512i;
  using F = __m512;
  static constexpr int kBytes = 64, kLanes = 16;
  static constexpr int kOffset8 = 0;
  static constexpr const char *kName = Gfni ? "avx512-gfni" : "avx512";
  // The multi-row matvec's rows per pass over a w row: up to 6
  // accumulators beside a row's 4 planes and the two digits' chains, and
  // 6 prepared x rows of K = 3072 (46 KiB) in L1; 8 rows as 4 + 4.
  static constexpr int kMatvecPassRows = 6;

  static Q loadW(const uint8_t *p) { return _mm512_loadu_si512(p); }
  static Q loadWPartial(const uint8_t *p, int n) {
    return _mm512_maskz_loadu_epi8(_cvtu64_mask64(~0ull >> (64 - n)), p);
  }
  template <int Bits, int J> static Q plane(Q w) {
    if constexpr (Bits == 8) {
      return w;
    } else if constexpr (J == 0) {
      return _mm512_and_si512(
          w, _mm512_set1_epi8(static_cast<char>((1 << Bits) - 1)));
    } else if constexpr (Gfni) {
      // One vgf2p8affineqb: result bit i of each byte is the parity of the
      // byte AND matrix byte 7 - i, so matrix byte 7 - i = bit Bits*J + i
      // (i < Bits) moves the plane's bits down and clears the rest.
      constexpr uint64_t kMatrix = gfniPlaneMatrix(Bits, J);
      return _mm512_gf2p8affine_epi64_epi8(
          w, _mm512_set1_epi64(static_cast<long long>(kMatrix)), 0);
    } else {
      return _mm512_and_si512(
          _mm512_srli_epi16(w, Bits * J),
          _mm512_set1_epi8(static_cast<char>((1 << Bits) - 1)));
    }
  }
  static I izero() { return _mm512_setzero_si512(); }
  static I shl8(I v) { return _mm512_slli_epi32(v, 8); }
  static I iadd(I a, I b) { return _mm512_add_epi32(a, b); }
  template <int Bits> static I dot(I acc, const Q *planes, const int8_t *x) {
    acc = _mm512_dpbusd_epi32(acc, planes[0], _mm512_loadu_si512(x));
    if constexpr (Bits <= 4)
      acc = _mm512_dpbusd_epi32(acc, planes[1], _mm512_loadu_si512(x + 64));
    if constexpr (Bits == 2) {
      acc = _mm512_dpbusd_epi32(acc, planes[2], _mm512_loadu_si512(x + 128));
      acc = _mm512_dpbusd_epi32(acc, planes[3], _mm512_loadu_si512(x + 192));
    }
    return acc;
  }
  static F cvt(I v) { return _mm512_cvtepi32_ps(v); }
  static F load(const float *p) { return _mm512_loadu_ps(p); }
  static F zero() { return _mm512_setzero_ps(); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F fmsub(F a, F b, F c) { return _mm512_fmsub_ps(a, b, c); }
  static float hsum(F v) { return _mm512_reduce_add_ps(v); }

  using Spread = __m512i;
  static Spread spread(int lanesPerGroup) {
    alignas(64) int idx[16];
    for (int i = 0; i < 16; ++i)
      idx[i] = i / lanesPerGroup;
    return _mm512_load_si512(idx);
  }
  static F scales(const uint8_t *p, int count, Spread s) {
    __m256i h =
        _mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << count) - 1), p);
    return _mm512_permutexvar_ps(s, _mm512_cvtph_ps(h));
  }
  static float dotHalf(const uint16_t *h, const float *f, int64_t n) {
    F acc = zero();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      acc = fma(_mm512_cvtph_ps(_mm256_loadu_si256(
                    reinterpret_cast<const __m256i *>(h + i))),
                _mm512_loadu_ps(f + i), acc);
    if (i < n) {
      __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
      acc = fma(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, h + i)),
                _mm512_maskz_loadu_ps(m, f + i), acc);
    }
    return hsum(acc);
  }
  static void prefetchL2(const uint8_t *p) {
    _mm_prefetch(reinterpret_cast<const char *>(p), _MM_HINT_T1);
  }
};


} // namespace
} // namespace fm::kernels::qdetail::avx512vnni
