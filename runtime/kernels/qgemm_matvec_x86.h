// Internal: one x row (decode's matvec) from the Panel16 layout on AVX-512
// VNNI, shared by qgemm_avx512.cpp (tile rows split by shift and mask) and
// qgemm_matvec_gfni.cpp (built with -mgfni too: a 2- or 4-bit tile row other
// than a vector's lowest plane is one vgf2p8affineqb). Include only from
// those files; each instantiates it on its own Tag.
//
// A pass over panels [p0, p1) two at a time, which are adjacent in memory,
// so a thread reads one linear stream (prefetched ahead into L2, as
// qmatmul's matvec does). Each tile row (4 inputs x 16 outputs) is taken
// out of its vector in registers and meets its 4 inputs as a broadcast
// memory operand of vpdpbusd; the dots run in 8 chains (2 panels x D digits
// x 4 / D tile-row phases). A unit's dots are folded at once into the 16
// f32 outputs of each panel: the group's 16 scales are one load. So the
// lanes are outputs and nothing is summed across lanes, where qmatmul's
// row-layout matvec folds each 64-byte step of each row with a lane
// permute of its scales: per 64 weight bytes at 2 bits and int8x2, ~14
// vector operations here against ~20 there.
#pragma once

#include "kernels/gfni_planes.h"
#include "kernels/qgemm_x86.h"

#include <cstring>
#include <type_traits>
#include <utility>

namespace fm::kernels::gdetail {

template <typename Tag, bool Gfni> struct PanelMatvec {
  // Each panel's stream is prefetched this far ahead of the block being
  // read, into L2. (The previous pass moved one cursor at most a block per
  // block read, so it never got ahead, and fell behind by a panel's scales
  // at every panel: its prefetch distance made no difference.)
  static constexpr int64_t kPrefetchBytes = 4096;

  template <class F, int... I>
  static FM_GEMM_INLINE void unrolled(F &&f, std::integer_sequence<int, I...>) {
    (f(std::integral_constant<int, I>{}), ...);
  }

  /// Tile row T of a block at `block` (Bits-bit quants, qgemm_layout.h).
  template <int Bits, int T>
  static FM_GEMM_INLINE __m512i tileRow(const uint8_t *block) {
    if constexpr (Bits == 8) {
      return _mm512_loadu_si512(block + 64 * T);
    } else {
      constexpr int V = 2 * Bits, J = T / V;
      const __m512i vec = _mm512_loadu_si512(block + 64 * (T % V));
      const __m512i mask = _mm512_set1_epi8(static_cast<char>((1 << Bits) - 1));
      if constexpr (J == 0)
        return _mm512_and_si512(vec, mask);
      else if constexpr (Gfni)
        return _mm512_gf2p8affine_epi64_epi8(
            vec,
            _mm512_set1_epi64(static_cast<long long>(gfniPlaneMatrix(Bits, J))),
            0);
      else
        return _mm512_and_si512(_mm512_srli_epi16(vec, Bits * J), mask);
    }
  }

  /// The scales (and minimums) of the panel at `panel` into L2, if it is
  /// before `end`.
  static FM_GEMM_INLINE void
  prefetchScales(const Params &p, const uint8_t *panel, const uint8_t *end) {
    if (end - panel <= 0)
      return;
    for (int64_t o = p.geo.scaleOffset; o < p.geo.panelBytes; o += 64)
      _mm_prefetch(reinterpret_cast<const char *>(panel + o), _MM_HINT_T1);
  }

  template <int D, int Bits, int U, bool Centred, int NP>
  static FM_GEMM_INLINE void panels(const Params &p, int64_t m, int64_t pi,
                                    int groupShift, const uint8_t *end) {
    using K = X86<Tag>;
    constexpr int kHalves = kPanelBlockInputs / U, kTiles = U / 4;
    constexpr int C = 4 / D; // chains per panel and digit
    const QuantFormat f = p.f;
    const Act &a = p.act;
    const float negCentre = -balancedCenter(f.bits);
    const uint8_t *panel[NP];
    for (int j = 0; j < NP; ++j)
      panel[j] = p.w + (pi + j) * p.geo.panelBytes;
    const int8_t *xq[D];
    for (int d = 0; d < D; ++d)
      xq[d] = a.xq + (m * D + d) * a.ldx;
    const float *dxRow = a.dx + m * a.ldd;
    const float *xsRow = a.xs + m * a.lds;
    // The scales (and minimums) sit after a panel's blocks, where the
    // blocks' prefetch reaches them only at the panel's end: the next
    // panels' go into L2 now.
    for (int j = 0; j < NP; ++j)
      prefetchScales(p, panel[j] + NP * p.geo.panelBytes, end);
    __m512 acc[NP], s[NP], mo[NP];
    for (int j = 0; j < NP; ++j)
      acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < p.geo.blocks; ++b) {
      const uint8_t *block[NP];
      for (int j = 0; j < NP; ++j)
        block[j] = panel[j] + b * p.geo.blockBytes;
      // Each panel's stream, kPrefetchBytes ahead of the block being read.
      for (int j = 0; j < NP; ++j)
        for (int64_t o = 0; o < p.geo.blockBytes; o += 64)
          if (kPrefetchBytes + o < end - block[j])
            _mm_prefetch(
                reinterpret_cast<const char *>(block[j] + kPrefetchBytes + o),
                _MM_HINT_T1);
      unrolled(
          [&](auto half) {
            constexpr int H = decltype(half)::value;
            const int64_t u = b * kHalves + H, k0 = u * U;
            const int64_t g = k0 >> groupShift;
            const int64_t groupMask = (int64_t(1) << groupShift) - 1;
            if (Centred || (k0 & groupMask) == 0)
              for (int j = 0; j < NP; ++j)
                K::scales(panel[j], p.geo, f, g, &s[j], &mo[j]);
            __m512i dot[NP][D][C];
            for (int j = 0; j < NP; ++j)
              for (int d = 0; d < D; ++d)
                for (int c = 0; c < C; ++c)
                  dot[j][d][c] = _mm512_setzero_si512();
            unrolled(
                [&](auto tile) {
                  constexpr int T = decltype(tile)::value;
                  __m512i xb[D];
                  for (int d = 0; d < D; ++d) {
                    int32_t quad;
                    std::memcpy(&quad, xq[d] + k0 + 4 * T, 4);
                    xb[d] = _mm512_set1_epi32(quad);
                  }
                  for (int j = 0; j < NP; ++j) {
                    const __m512i w = tileRow<Bits, H * kTiles + T>(block[j]);
                    for (int d = 0; d < D; ++d)
                      dot[j][d][T % C] =
                          _mm512_dpbusd_epi32(dot[j][d][T % C], w, xb[d]);
                  }
                },
                std::make_integer_sequence<int, kTiles>{});
            const __m512 dx = _mm512_set1_ps(dxRow[u]);
            for (int j = 0; j < NP; ++j) {
              __m512i dj[D];
              for (int d = 0; d < D; ++d) {
                dj[d] = dot[j][d][0];
                for (int c = 1; c < C; ++c)
                  dj[d] = _mm512_add_epi32(dj[d], dot[j][d][c]);
              }
              const __m512 v =
                  _mm512_cvtepi32_ps(K::template combine<D>(dj, a.hiShift));
              if constexpr (Centred) {
                // s (dot dx - c xs): the grid offset joins the product.
                const __m512 t = _mm512_fmadd_ps(
                    v, dx, _mm512_set1_ps(negCentre * xsRow[g]));
                acc[j] = _mm512_fmadd_ps(t, s[j], acc[j]);
              } else {
                acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(v, dx), s[j], acc[j]);
                if (((k0 + U) & groupMask) == 0)
                  acc[j] =
                      _mm512_fmadd_ps(mo[j], _mm512_set1_ps(xsRow[g]), acc[j]);
              }
            }
          },
          std::make_integer_sequence<int, kHalves>{});
    }
    for (int j = 0; j < NP; ++j) {
      const int64_t n0 = (pi + j) * kPanelRows;
      const int64_t valid = p.N - n0 < kPanelRows ? p.N - n0 : kPanelRows;
      const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1);
      float *out = p.y + m * p.ldy + n0;
      __m512 v = acc[j];
      if (p.accumulate)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, out));
      _mm512_mask_storeu_ps(out, mask, v);
    }
  }

  template <int D, int Bits, int U, bool Centred>
  static void rangeU(const Params &p, int64_t m, int64_t p0, int64_t p1) {
    int groupShift = 0;
    while ((1 << groupShift) < p.f.group)
      ++groupShift;
    const uint8_t *start = p.w + p0 * p.geo.panelBytes;
    const uint8_t *end = p.w + p1 * p.geo.panelBytes;
    // The first two panels' scales, and the bytes before the blocks'
    // prefetch distance takes over.
    prefetchScales(p, start, end);
    if (p1 - p0 > 1)
      prefetchScales(p, start + p.geo.panelBytes, end);
    for (int64_t o = 0; o < kPrefetchBytes && o < end - start; o += 64)
      _mm_prefetch(reinterpret_cast<const char *>(start + o), _MM_HINT_T1);
    int64_t pi = p0;
    for (; pi + 2 <= p1; pi += 2)
      panels<D, Bits, U, Centred, 2>(p, m, pi, groupShift, end);
    if (pi < p1)
      panels<D, Bits, U, Centred, 1>(p, m, pi, groupShift, end);
  }

  template <int D, int Bits>
  static void rangeBits(const Params &p, int64_t m, int64_t p0, int64_t p1) {
    withUnit(p, [&](auto unit, auto centred) {
      rangeU<D, Bits, decltype(unit)::value, decltype(centred)::value>(p, m, p0,
                                                                       p1);
    });
  }

  /// Row m of y, outputs of panels [p0, p1): not the pair-tile layout.
  static void run(const Params &p, int64_t m, int64_t p0, int64_t p1) {
    const bool two = p.act.digits == 2;
    switch (p.f.bits) {
    case 2:
      return two ? rangeBits<2, 2>(p, m, p0, p1)
                 : rangeBits<1, 2>(p, m, p0, p1);
    case 4:
      return two ? rangeBits<2, 4>(p, m, p0, p1)
                 : rangeBits<1, 4>(p, m, p0, p1);
    default:
      return two ? rangeBits<2, 8>(p, m, p0, p1)
                 : rangeBits<1, 8>(p, m, p0, p1);
    }
  }
};

} // namespace fm::kernels::gdetail
