// Internal: the ViT attention kernel body (vit_attention.h), written once
// over a SIMD traits type and compiled per instruction set by
// vit_attention.cpp (generic), vit_attention_avx2.cpp and
// vit_attention_avx512.cpp.
//
// One work item is a (window, head, block of queries). Its keys (transposed,
// with the two relative-position tables appended as extra columns) and
// values are gathered once per (window, head) into the thread's scratch; the
// scores of the query block against all those columns are one outer-product
// register tile pass (q broadcast, keys loaded as vectors, no horizontal
// sums), which yields q·k and the rel-pos dot products q·relPosH[r],
// q·relPosW[r] together; then the bias, the softmax, and p·v as a second
// tile pass.
//
// As in attention_impl.h, everything is a member of a template on a Tag
// private to the instantiating file (distinct symbols per build) and no
// standard-library templates are used here.
//
// Tag provides kLanes (partial sums of the softmax loops), kMR (query rows
// of a tile), kNVMax (vectors of columns of a tile) and Simd: Reg, kLanes,
// zero(), broadcast(float), fma(a, b, c) = a*b + c, load/store(float *).
#pragma once

#include "kernels/exp_approx.h"
#include "kernels/vit_attention_isa.h"

#include <cstdint>

namespace fm::kernels::detail {

template <typename Tag> struct VitAttentionKernel {
  using S = typename Tag::Simd;
  using Reg = typename S::Reg;
  static constexpr int L = S::kLanes;
  static constexpr int MR = Tag::kMR, NVMax = Tag::kNVMax;
  static constexpr int kLanes = Tag::kLanes;
  static_assert(kVitPad % L == 0, "scratch padding must hold whole vectors");
  /// The most queries in one item (VitGeometry::queryBlock).
  static constexpr int kMaxQueries = 64;

  static int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }

  /// The qkv row of key j of window (wy, wx), or null for a padded token
  /// without padQkv (zeros).
  static const float *keyRow(const VitGeometry &g, int64_t wy, int64_t wx,
                             int64_t j) {
    if (j < g.R)
      return g.qkv + j * g.ldQkv;
    const int64_t l = j - g.R;
    const int64_t y = wy * g.Sh + l / g.Sw, x = wx * g.Sw + l % g.Sw;
    if (y < g.gh && x < g.gw)
      return g.qkv + (g.R + y * g.gw + x) * g.ldQkv;
    return g.padQkv;
  }

  /// keyT [D][columns] and values [keys][dPad] of (window, head).
  static void gather(const VitGeometry &g, int64_t window, int64_t head,
                     VitScratch &sc) {
    const int64_t wy = window / g.windowsX, wx = window % g.windowsX;
    const int64_t D = g.D, cols = g.columns;
    float *keyT = sc.keyT, *values = sc.values;
    for (int64_t j = 0; j < g.keys; ++j) {
      const float *row = keyRow(g, wy, wx, j);
      const float *k = row ? row + g.C + head * D : nullptr;
      const float *v = row ? row + 2 * g.C + head * D : nullptr;
      float *vRow = values + j * g.dPad;
      for (int64_t d = 0; d < D; ++d) {
        keyT[d * cols + j] = k ? k[d] : 0.0f;
        vRow[d] = v ? v[d] : 0.0f;
      }
      for (int64_t d = D; d < g.dPad; ++d)
        vRow[d] = 0.0f;
    }
    for (int64_t d = 0; d < D; ++d) {
      float *row = keyT + d * cols;
      for (int64_t j = g.keys; j < g.keysPad; ++j)
        row[j] = 0.0f;
      if (!g.rel)
        continue;
      float *relH = row + g.keysPad, *relW = relH + g.relHPad;
      for (int64_t r = 0; r < g.relHPad; ++r)
        relH[r] = r < 2 * g.Sh - 1 ? g.relH[r * D + d] : 0.0f;
      for (int64_t r = 0; r < g.relWPad; ++r)
        relW[r] = r < 2 * g.Sw - 1 ? g.relW[r * D + d] : 0.0f;
    }
    sc.cachedWindow = window;
    sc.cachedHead = head;
  }

  /// s[m][j0 .. j0 + NV·L) = q_m · keyT[.][j] for the mr query rows `rows`.
  template <int NV>
  static void scoreTile(const float *const *rows, int mr,
                        const float *__restrict keyT, int64_t ld, int64_t j0,
                        int64_t D, float *s, int64_t lds) {
    // Rows past mr repeat row 0: computed, never stored.
    const float *r[MR];
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
      r[m] = rows[m < mr ? m : 0];
    Reg acc[MR][NV];
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc[m][v] = S::zero();
    for (int64_t d = 0; d < D; ++d) {
      Reg kv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        kv[v] = S::load(keyT + d * ld + j0 + v * L);
#pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        const Reg q = S::broadcast(r[m][d]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
          acc[m][v] = S::fma(q, kv[v], acc[m][v]);
      }
    }
    for (int m = 0; m < mr; ++m)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        S::store(s + m * lds + j0 + v * L, acc[m][v]);
  }

  /// o[m][d0 .. d0 + NV·L) = Σ_j p[m][j] · values[j][d] over `keys` keys.
  template <int NV>
  static void valueTile(const float *p, int64_t ldp, int mr, int64_t keys,
                        const float *__restrict values, int64_t ldv, int64_t d0,
                        float *o, int64_t ldo) {
    const float *r[MR];
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
      r[m] = p + (m < mr ? m : 0) * ldp;
    Reg acc[MR][NV];
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc[m][v] = S::zero();
    for (int64_t j = 0; j < keys; ++j) {
      Reg vv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        vv[v] = S::load(values + j * ldv + d0 + v * L);
#pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        const Reg w = S::broadcast(r[m][j]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
          acc[m][v] = S::fma(w, vv[v], acc[m][v]);
      }
    }
    for (int m = 0; m < mr; ++m)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        S::store(o + m * ldo + d0 + v * L, acc[m][v]);
  }

  static void scores(int nv, const float *const *rows, int mr,
                     const float *keyT, int64_t ld, int64_t j0, int64_t D,
                     float *s, int64_t lds) {
    if constexpr (NVMax >= 4)
      if (nv == 4)
        return scoreTile<4>(rows, mr, keyT, ld, j0, D, s, lds);
    if constexpr (NVMax >= 3)
      if (nv == 3)
        return scoreTile<3>(rows, mr, keyT, ld, j0, D, s, lds);
    if constexpr (NVMax >= 2)
      if (nv == 2)
        return scoreTile<2>(rows, mr, keyT, ld, j0, D, s, lds);
    scoreTile<1>(rows, mr, keyT, ld, j0, D, s, lds);
  }

  static void weighValues(int nv, const float *p, int64_t ldp, int mr,
                          int64_t keys, const float *values, int64_t ldv,
                          int64_t d0, float *o, int64_t ldo) {
    if constexpr (NVMax >= 4)
      if (nv == 4)
        return valueTile<4>(p, ldp, mr, keys, values, ldv, d0, o, ldo);
    if constexpr (NVMax >= 3)
      if (nv == 3)
        return valueTile<3>(p, ldp, mr, keys, values, ldv, d0, o, ldo);
    if constexpr (NVMax >= 2)
      if (nv == 2)
        return valueTile<2>(p, ldp, mr, keys, values, ldv, d0, o, ldo);
    valueTile<1>(p, ldp, mr, keys, values, ldv, d0, o, ldo);
  }

  static float maxOf(const float *p, int64_t n) {
    float acc[kLanes];
    for (int l = 0; l < kLanes; ++l)
      acc[l] = p[0];
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes)
      for (int l = 0; l < kLanes; ++l)
        acc[l] = acc[l] < p[j + l] ? p[j + l] : acc[l];
    float m = p[0];
    for (; j < n; ++j)
      m = m < p[j] ? p[j] : m;
    for (int l = 0; l < kLanes; ++l)
      m = m < acc[l] ? acc[l] : m;
    return m;
  }

  /// p[j] = e^(p[j] - max), returns the sum.
  static float expAndSum(float *p, int64_t n, float max) {
    for (int64_t j = 0; j < n; ++j)
      p[j] = ExpApprox<Tag>::nonPositive(p[j] - max);
    float acc[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes)
      for (int l = 0; l < kLanes; ++l)
        acc[l] += p[j + l];
    float s = 0.0f;
    for (int l = 0; l < kLanes; ++l)
      s += acc[l];
    for (; j < n; ++j)
      s += p[j];
    return s;
  }

  static void item(const VitGeometry &g, int64_t window, int64_t head,
                   int64_t block, VitScratch &sc) {
    const int64_t wy = window / g.windowsX, wx = window % g.windowsX;
    // The window's real patches (the rest of it is padding): registers
    // first, then these, row-major.
    const int64_t hb = min(g.Sh, g.gh - wy * g.Sh);
    const int64_t wb = min(g.Sw, g.gw - wx * g.Sw);
    const int64_t queries = g.R + hb * wb;
    const int64_t q0 = block * g.queryBlock;
    if (q0 >= queries)
      return;
    const int qn = static_cast<int>(min(g.queryBlock, queries - q0));
    if (sc.cachedWindow != window || sc.cachedHead != head)
      gather(g, window, head, sc);

    const int64_t D = g.D, C = g.C, cols = g.columns;
    const float *rows[kMaxQueries];
    float *dest[kMaxQueries];
    int64_t ly[kMaxQueries], lx[kMaxQueries];
    for (int i = 0; i < qn; ++i) {
      const int64_t q = q0 + i;
      if (q < g.R) {
        rows[i] = g.qkv + q * g.ldQkv + head * D;
        dest[i] = g.window ? g.registerOut + (window * g.R + q) * C + head * D
                           : g.out + q * g.ldOut + head * D;
        ly[i] = lx[i] = -1;
      } else {
        ly[i] = (q - g.R) / wb;
        lx[i] = (q - g.R) % wb;
        const int64_t t = g.R + (wy * g.Sh + ly[i]) * g.gw + wx * g.Sw + lx[i];
        rows[i] = g.qkv + t * g.ldQkv + head * D;
        dest[i] = g.out + t * g.ldOut + head * D;
      }
    }

    // Scores and rel-pos dot products: the block against every column.
    float *s = sc.scores;
    for (int64_t j0 = 0; j0 < cols; j0 += NVMax * L) {
      const int nv = static_cast<int>(min(NVMax, (cols - j0) / L));
      for (int i0 = 0; i0 < qn; i0 += MR)
        scores(nv, rows + i0, static_cast<int>(min(MR, qn - i0)), sc.keyT,
               cols, j0, D, s + i0 * cols, cols);
    }

    float inv[kMaxQueries];
    for (int i = 0; i < qn; ++i) {
      float *row = s + i * cols;
      for (int64_t j = 0; j < g.keys; ++j)
        row[j] *= g.scale;
      if (g.rel && ly[i] >= 0) {
        // score[(ky, kx)] += q·relH[ly − ky + Sh − 1] + q·relW[lx − kx + Sw − 1]
        const float *relH = row + g.keysPad, *relW = relH + g.relHPad;
        for (int64_t ky = 0; ky < g.Sh; ++ky) {
          const float bh = relH[ly[i] - ky + g.Sh - 1];
          float *patch = row + g.R + ky * g.Sw;
          const float *w = relW + lx[i] + g.Sw - 1;
          for (int64_t kx = 0; kx < g.Sw; ++kx)
            patch[kx] += bh + w[-kx];
        }
      }
      inv[i] = 1.0f / expAndSum(row, g.keys, maxOf(row, g.keys));
    }

    float *o = sc.outRows;
    for (int64_t d0 = 0; d0 < g.dPad; d0 += NVMax * L) {
      const int nv = static_cast<int>(min(NVMax, (g.dPad - d0) / L));
      for (int i0 = 0; i0 < qn; i0 += MR)
        weighValues(nv, s + i0 * cols, cols, static_cast<int>(min(MR, qn - i0)),
                    g.keys, sc.values, g.dPad, d0, o + i0 * g.dPad, g.dPad);
    }
    for (int i = 0; i < qn; ++i)
      for (int64_t d = 0; d < D; ++d)
        dest[i][d] = o[i * g.dPad + d] * inv[i];
  }

  /// VitRangeFn.
  static void range(const VitGeometry &g, int64_t begin, int64_t end,
                    VitScratch &sc) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t block = t % g.queryBlocks;
      const int64_t pair = t / g.queryBlocks;
      item(g, pair / g.H, pair % g.H, block, sc);
    }
  }
};

} // namespace fm::kernels::detail
