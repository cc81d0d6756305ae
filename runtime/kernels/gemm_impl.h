// Internal: the packed GEMM (gemm.h) written once over a SIMD traits type
// and instantiated by each ISA file (gemm_generic.cpp, gemm_avx2.cpp,
// gemm_avx512.cpp, gemm_neon.cpp).
//
// GotoBLAS/BLIS structure: for each slab of kNC columns and each kKC-deep
// slice of K, the slice of w is packed into column panels of NR = kNV * kLanes
// ([k][NR], one contiguous run per k); for each block of kMC rows the slice
// of x is packed into row panels of kMR ([k][kMR]). An MR x NR register tile
// then loads NR/kLanes vectors of w and broadcasts MR values of x per k:
// MR * NR/kLanes FMAs for NR/kLanes + MR loads, no horizontal sums. The w
// panel (kKC * NR floats) stays in L1 while the tile walks down the packed
// rows of x, which stay in L2.
//
// As in matmul_tiles.h, everything is a template on the traits type V that
// each ISA file defines in its own namespace, so no symbol built with wide
// instructions is shared with another build; no standard-library templates.
//
// V provides: Reg, kLanes, zero(), broadcast(float), fma(a, b, c) = a*b + c,
// add(a, b), load/store(float *), loadPartial(const float *, n) and
// storePartial(float *, Reg, n) for n < kLanes (never touching memory past
// p + n), prefetch(const void *); and the blocking kMR, kNV, kKC, kMC (a multiple of kMR), kNC (a
// multiple of kNV * kLanes).
#pragma once

#include "kernels/gemm_isa.h"

#include <cstdint>

namespace fm::kernels::detail {

template <typename V> struct Gemm {
  using Reg = typename V::Reg;
  static constexpr int L = V::kLanes;
  static constexpr int MR = V::kMR, NV = V::kNV, NR = V::kNV * V::kLanes;
  static constexpr int64_t KC = V::kKC, MC = V::kMC, NC = V::kNC;
  static_assert(MC % MR == 0 && NC % NR == 0, "blocks of whole tiles");

  static constexpr int64_t kAFloats = MC * KC;
  static constexpr int64_t kBFloats = KC * NC;

  static int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }

  /// Columns [n0, n0 + nc) of w over k in [k0, k0 + kc), as ceil(nc/NR)
  /// panels [kc][NR]; columns past nc are zero.
  static void packW(const float *w, int64_t K, int64_t n0, int64_t nc,
                    int64_t k0, int64_t kc, float *out) {
    for (int64_t j = 0; j < nc; j += NR) {
      const int64_t cols = min(NR, nc - j);
      float *panel = out + j * kc;
      for (int64_t c = 0; c < cols; ++c) {
        // One row of w is contiguous in k: read it once, scatter it down the
        // panel's column.
        const float *src = w + (n0 + j + c) * K + k0;
        for (int64_t k = 0; k < kc; ++k)
          panel[k * NR + c] = src[k];
      }
      for (int64_t c = cols; c < NR; ++c)
        for (int64_t k = 0; k < kc; ++k)
          panel[k * NR + c] = 0.0f;
    }
  }

  /// Rows [m0, m0 + mc) of x over k in [k0, k0 + kc), as ceil(mc/MR)
  /// panels [kc][MR]; rows past mc are zero.
  static void packX(const float *x, int64_t K, int64_t m0, int64_t mc,
                    int64_t k0, int64_t kc, float *out) {
    for (int64_t i = 0; i < mc; i += MR) {
      const int64_t rows = min(MR, mc - i);
      float *panel = out + i * kc;
      for (int64_t r = 0; r < rows; ++r) {
        const float *src = x + (m0 + i + r) * K + k0;
        for (int64_t k = 0; k < kc; ++k)
          panel[k * MR + r] = src[k];
      }
      for (int64_t r = rows; r < MR; ++r)
        for (int64_t k = 0; k < kc; ++k)
          panel[k * MR + r] = 0.0f;
    }
  }

  /// The MR x NR tile y (ldy apart) from one x panel and one w panel over
  /// kc: y = tile (+ bias) (+ y when addY); only mr rows and nr columns are
  /// stored.
  static void tile(const float *__restrict xp, const float *__restrict wp,
                   int64_t kc, float *y, int64_t ldy, const float *bias,
                   bool addY, int mr, int nr) {
    // The tile of y is read (or written) once, after kc steps: ask for its
    // lines now so that the misses overlap the FMAs instead of following
    // them.
    for (int m = 0; m < mr; ++m) {
      for (int c = 0; c < nr; c += 16)
        V::prefetch(y + m * ldy + c);
      V::prefetch(y + m * ldy + nr - 1);
    }
    Reg acc[MR][NV];
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc[m][v] = V::zero();
#pragma GCC unroll 2
    for (int64_t k = 0; k < kc; ++k) {
      Reg wv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        wv[v] = V::load(wp + k * NR + v * L);
#pragma GCC unroll 16
      for (int m = 0; m < MR; ++m) {
        const Reg xv = V::broadcast(xp[k * MR + m]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
          acc[m][v] = V::fma(xv, wv[v], acc[m][v]);
      }
    }

    if (mr == MR && nr == NR) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const Reg b = bias ? V::load(bias + v * L) : V::zero();
#pragma GCC unroll 16
        for (int m = 0; m < MR; ++m) {
          float *out = y + m * ldy + v * L;
          Reg r = V::add(acc[m][v], b);
          if (addY)
            r = V::add(r, V::load(out));
          V::store(out, r);
        }
      }
      return;
    }
    for (int v = 0; v < NV; ++v) {
      const int cols = nr - v * L < L ? nr - v * L : L;
      if (cols <= 0)
        break;
      const Reg b = !bias ? V::zero()
                    : cols == L ? V::load(bias + v * L)
                                : V::loadPartial(bias + v * L, cols);
      for (int m = 0; m < mr; ++m) {
        float *out = y + m * ldy + v * L;
        Reg r = V::add(acc[m][v], b);
        if (cols == L) {
          if (addY)
            r = V::add(r, V::load(out));
          V::store(out, r);
        } else {
          if (addY)
            r = V::add(r, V::loadPartial(out, cols));
          V::storePartial(out, r, cols);
        }
      }
    }
  }

  /// GemmBlockFn: y[m0, m1) x [n0, n1) of p.
  static void block(const GemmProblem &p, int64_t m0, int64_t m1, int64_t n0,
                    int64_t n1, float *xPanel, float *wPanel) {
    for (int64_t jc = n0; jc < n1; jc += NC) {
      const int64_t nc = min(NC, n1 - jc);
      for (int64_t pc = 0; pc < p.K; pc += KC) {
        const int64_t kc = min(KC, p.K - pc);
        const bool first = pc == 0;
        packW(p.w, p.K, jc, nc, pc, kc, wPanel);
        for (int64_t ic = m0; ic < m1; ic += MC) {
          const int64_t mc = min(MC, m1 - ic);
          packX(p.x, p.K, ic, mc, pc, kc, xPanel);
          for (int64_t jr = 0; jr < nc; jr += NR) {
            const int nr = static_cast<int>(min(NR, nc - jr));
            const float *wp = wPanel + jr * kc;
            const float *bias = first && p.bias ? p.bias + jc + jr : nullptr;
            const bool addY = first ? p.accumulate : true;
            for (int64_t ir = 0; ir < mc; ir += MR) {
              const int mr = static_cast<int>(min(MR, mc - ir));
              tile(xPanel + ir * kc, wp, kc, p.y + (ic + ir) * p.N + jc + jr,
                   p.N, bias, addY, mr, nr);
            }
          }
        }
      }
    }
  }

  static constexpr GemmIsa table() {
    return GemmIsa{&block, MR, NR, kAFloats, kBFloats};
  }
};

} // namespace fm::kernels::detail
