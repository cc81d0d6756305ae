// Internal: the AVX-512 pieces the VNNI and AMX GEMM kernels share:
// unpacking a Panel16 block into its 16 tile rows, a group's scales, and
// the epilogue that folds a unit's int32 dots into the f32 outputs.
// Include only from files built with AVX-512 (F, BW, VL) and F16C; members
// of a template on the including file's Tag, so each file keeps its own
// symbols.
#pragma once

#include "kernels/qgemm_isa.h"

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

namespace fm::kernels::gdetail {

template <typename Tag> struct X86 {
  /// The 16 tile rows (64 bytes each) of a block at `block` into `rows`
  /// (64-byte aligned); 8-bit blocks are their tile rows already.
  template <int Bits>
  static void unpack(const uint8_t *block, uint8_t *rows) {
    constexpr int V = 2 * Bits, P = 8 / Bits;
    const __m512i mask = _mm512_set1_epi8(static_cast<char>((1 << Bits) - 1));
    for (int v = 0; v < V; ++v) {
      const __m512i vec = _mm512_loadu_si512(block + 64 * v);
      _mm512_store_si512(rows + 64 * v, _mm512_and_si512(vec, mask));
      for (int j = 1; j < P; ++j)
        _mm512_store_si512(
            rows + 64 * (v + V * j),
            _mm512_and_si512(_mm512_srli_epi16(vec, Bits * j), mask));
    }
  }

  /// Group g's 16 scales of a panel, and mo (qgemm_isa.h) for offset o = 0:
  /// -c * s (balanced) or the minimum (affine).
  static void scales(const uint8_t *panel, const PanelGeometry &geo,
                     QuantFormat f, int64_t g, __m512 *s, __m512 *mo) {
    *s = _mm512_cvtph_ps(_mm256_loadu_si256(
        reinterpret_cast<const __m256i *>(panel + geo.scaleOffset + g * 32)));
    if (f.grid == QuantGrid::Affine)
      *mo = _mm512_cvtph_ps(_mm256_loadu_si256(
          reinterpret_cast<const __m256i *>(panel + geo.minOffset + g * 32)));
    else
      *mo = _mm512_mul_ps(*s, _mm512_set1_ps(-balancedCenter(f.bits)));
  }

  /// The int32 dot of one x row with a panel's 16 outputs for one block,
  /// from its D digit rows (2^S d0 + d1, S = Act::hiShift).
  template <int D>
  static __m512i combine(const __m512i *digits, int hiShift) {
    if constexpr (D == 2)
      return _mm512_add_epi32(_mm512_slli_epi32(digits[0], hiShift),
                              digits[1]);
    else
      return digits[0];
  }

  /// acc (16 outputs) += dot * dx * s, and at a group's end + mo * xs.
  static void fold(float *acc, __m512i dot, float dx, __m512 s, bool groupEnd,
                   __m512 mo, float xs) {
    __m512 a = _mm512_loadu_ps(acc);
    a = _mm512_fmadd_ps(
        _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(dx)), s, a);
    if (groupEnd)
      a = _mm512_fmadd_ps(mo, _mm512_set1_ps(xs), a);
    _mm512_storeu_ps(acc, a);
  }

  /// acc (16 outputs) += s * (dot * dx + oxs), for a unit that is a whole
  /// group of a balanced grid: oxs = (o - c) * xs, the grid offset of fold's
  /// mo * xs taken into the first product (one multiply fewer).
  static void foldCentred(float *acc, __m512i dot, float dx, __m512 s,
                          float oxs) {
    const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot),
                                     _mm512_set1_ps(dx), _mm512_set1_ps(oxs));
    _mm512_storeu_ps(acc, _mm512_fmadd_ps(t, s, _mm512_loadu_ps(acc)));
  }

  /// y rows [m0, m1) x 16 * panels outputs starting at panel pi from acc
  /// ([rows][32], panel j in columns 16j..16j+15).
  static void store(const Params &p, const float *acc, int64_t m0, int64_t m1,
                    int64_t pi, int panels) {
    for (int j = 0; j < panels; ++j) {
      const int64_t n0 = (pi + j) * kPanelRows;
      const int64_t valid = p.N - n0 < kPanelRows ? p.N - n0 : kPanelRows;
      const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1);
      for (int64_t m = m0; m < m1; ++m) {
        float *out = p.y + m * p.ldy + n0;
        __m512 v = _mm512_loadu_ps(acc + (m - m0) * 32 + 16 * j);
        if (p.accumulate)
          v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, out));
        _mm512_mask_storeu_ps(out, mask, v);
      }
    }
  }
};

} // namespace fm::kernels::gdetail
