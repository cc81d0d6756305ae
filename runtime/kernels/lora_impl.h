// Internal: the LoRA products over one instruction set's vector type V (a
// Simd of simd_avx2.h / simd_avx512.h plus loadU8: kLanes bytes widened to
// floats). Included by lora_avx2.cpp and lora_avx512.cpp, each built with
// its own flags.
//
// Down (t = x·Aᵀ): register tiles of 4 rows of A × 1 row of x (decode: four
// independent dot products share each load of x) or 1 row of A × 4 rows of
// x (prefill: each loaded weight vector meets four rows); q8 rows are
// dequantized in registers, one scale per group. Up (y += s·t·Bᵀ, with Bᵀ
// stored): blocks of 4 vectors of y columns × up to 4 rows, accumulated in
// registers over the rank and added to y once.
#pragma once

#include "kernels/lora_isa.h"
#include "kernels/matmul.h"
#include "kernels/qformat.h"

#include <cstring>

namespace fm::kernels::detail {

template <typename V> struct LoraKernels {
  using Reg = typename V::Reg;
  static constexpr int L = V::kLanes;

  static float scaleOf(const uint8_t *scales, int64_t g) {
    uint16_t h;
    std::memcpy(&h, scales + 2 * g, 2);
    return halfToFloat(h);
  }
  static const uint8_t *q8Row(const LoraMatrix &m, int64_t row) {
    const QuantFormat f{8, m.group, QuantGrid::Balanced};
    return static_cast<const uint8_t *>(m.data) + row * packedRowBytes(f, m.cols);
  }

  // out[r * MB + j] = dot(x row j, a row r), f16 a.
  template <int RB, int MB>
  static void dotF16(const float *const *xr, const uint16_t *const *wr,
                     int64_t K, float *out) {
    Reg acc[RB][MB];
    for (int r = 0; r < RB; ++r)
      for (int j = 0; j < MB; ++j)
        acc[r][j] = V::zero();
    int64_t k = 0;
    for (; k + L <= K; k += L) {
      Reg xv[MB];
      for (int j = 0; j < MB; ++j)
        xv[j] = V::load(xr[j] + k);
      for (int r = 0; r < RB; ++r) {
        const Reg w = V::load(wr[r] + k);
        for (int j = 0; j < MB; ++j)
          acc[r][j] = V::fma(xv[j], w, acc[r][j]);
      }
    }
    if (k < K) {
      const int n = static_cast<int>(K - k);
      Reg xv[MB];
      for (int j = 0; j < MB; ++j)
        xv[j] = V::loadPartial(xr[j] + k, n);
      for (int r = 0; r < RB; ++r) {
        const Reg w = V::loadPartial(wr[r] + k, n);
        for (int j = 0; j < MB; ++j)
          acc[r][j] = V::fma(xv[j], w, acc[r][j]);
      }
    }
    reduce<RB, MB>(acc, out);
  }

  // As dotF16 for q8 rows: K and the group are multiples of L.
  template <int RB, int MB>
  static void dotQ8(const float *const *xr, const uint8_t *const *qr,
                    int64_t K, int64_t group, float *out) {
    Reg acc[RB][MB];
    for (int r = 0; r < RB; ++r)
      for (int j = 0; j < MB; ++j)
        acc[r][j] = V::zero();
    for (int64_t g = 0; g * group < K; ++g) {
      Reg s[RB], c[RB];
      for (int r = 0; r < RB; ++r) {
        const float sc = scaleOf(qr[r] + K, g);
        s[r] = V::broadcast(sc);
        c[r] = V::broadcast(-balancedCenter(8) * sc);
      }
      for (int64_t k = g * group; k < (g + 1) * group; k += L) {
        Reg xv[MB];
        for (int j = 0; j < MB; ++j)
          xv[j] = V::load(xr[j] + k);
        for (int r = 0; r < RB; ++r) {
          const Reg w = V::fma(V::loadU8(qr[r] + k), s[r], c[r]);
          for (int j = 0; j < MB; ++j)
            acc[r][j] = V::fma(xv[j], w, acc[r][j]);
        }
      }
    }
    reduce<RB, MB>(acc, out);
  }

  template <int RB, int MB>
  static void reduce(Reg (&acc)[RB][MB], float *out) {
    if constexpr (RB * MB == 4) {
      Reg flat[4];
      for (int r = 0; r < RB; ++r)
        for (int j = 0; j < MB; ++j)
          flat[r * MB + j] = acc[r][j];
      V::sum4(flat, out);
    } else {
      for (int r = 0; r < RB; ++r)
        for (int j = 0; j < MB; ++j)
          out[r * MB + j] = V::sum(acc[r][j]);
    }
  }

  // Rows [i, i + RB) of a against rows [m0, m0 + MB) of x.
  template <int RB, int MB>
  static void downTile(const float *x, int64_t ldx, int64_t m0,
                       const LoraMatrix &a, int64_t i, float *t, int64_t ldt) {
    const float *xr[MB];
    for (int j = 0; j < MB; ++j)
      xr[j] = x + (m0 + j) * ldx;
    float out[RB * MB];
    if (a.q8) {
      const uint8_t *qr[RB];
      for (int r = 0; r < RB; ++r)
        qr[r] = q8Row(a, i + r);
      dotQ8<RB, MB>(xr, qr, a.cols, a.group, out);
    } else {
      const uint16_t *wr[RB];
      for (int r = 0; r < RB; ++r)
        wr[r] = static_cast<const uint16_t *>(a.data) + (i + r) * a.cols;
      dotF16<RB, MB>(xr, wr, a.cols, out);
    }
    for (int r = 0; r < RB; ++r)
      for (int j = 0; j < MB; ++j)
        t[(m0 + j) * ldt + i + r] = out[r * MB + j];
  }

  template <int MB>
  static void downRows(const float *x, int64_t ldx, int64_t m0,
                       const LoraMatrix &a, int64_t i0, int64_t i1, float *t,
                       int64_t ldt) {
    for (int64_t i = i0; i < i1; ++i)
      downTile<1, MB>(x, ldx, m0, a, i, t, ldt);
  }

  static void down(const float *x, int64_t M, int64_t ldx, const LoraMatrix &a,
                   int64_t i0, int64_t i1, float *t, int64_t ldt) {
    if (M == 1) {
      int64_t i = i0;
      for (; i + 4 <= i1; i += 4)
        downTile<4, 1>(x, ldx, 0, a, i, t, ldt);
      for (; i < i1; ++i)
        downTile<1, 1>(x, ldx, 0, a, i, t, ldt);
      return;
    }
    int64_t m0 = 0;
    for (; m0 + 4 <= M; m0 += 4)
      downRows<4>(x, ldx, m0, a, i0, i1, t, ldt);
    switch (M - m0) {
    case 3:
      downRows<3>(x, ldx, m0, a, i0, i1, t, ldt);
      break;
    case 2:
      downRows<2>(x, ldx, m0, a, i0, i1, t, ldt);
      break;
    case 1:
      downRows<1>(x, ldx, m0, a, i0, i1, t, ldt);
      break;
    default:
      break;
    }
  }

  // Vector v of columns [n, n + 4L) of bt row i (`count` < L: a partial
  // last vector; q8 widths are whole vectors).
  static Reg weight(const LoraMatrix &bt, int64_t i, int64_t col, int count) {
    if (bt.q8) {
      const uint8_t *row = q8Row(bt, i);
      const float s = scaleOf(row + bt.cols, col / bt.group);
      return V::fma(V::loadU8(row + col), V::broadcast(s),
                    V::broadcast(-balancedCenter(8) * s));
    }
    const uint16_t *p = static_cast<const uint16_t *>(bt.data) + i * bt.cols + col;
    return count < L ? V::loadPartial(p, count) : V::load(p);
  }

  // y rows [0, MB) (t and y already offset to them), columns [n, n + width),
  // width <= 4L; Full: width == 4L.
  template <int MB, bool Full>
  static void upBlock(const float *t, int64_t ldt, const LoraMatrix &bt,
                      int64_t n, int64_t width, float scale, float *y,
                      int64_t ldy) {
    const int nv = Full ? 4 : static_cast<int>((width + L - 1) / L);
    const int last = Full ? L : static_cast<int>(width - (nv - 1) * L);
    Reg acc[MB][4];
    for (int j = 0; j < MB; ++j)
      for (int v = 0; v < 4; ++v)
        acc[j][v] = V::zero();
    for (int64_t i = 0; i < bt.rows; ++i) {
      Reg w[4];
      for (int v = 0; v < 4; ++v)
        if (Full || v < nv)
          w[v] = weight(bt, i, n + v * L, Full || v + 1 < nv ? L : last);
      for (int j = 0; j < MB; ++j) {
        const Reg c = V::broadcast(scale * t[j * ldt + i]);
        for (int v = 0; v < 4; ++v)
          if (Full || v < nv)
            acc[j][v] = V::fma(c, w[v], acc[j][v]);
      }
    }
    for (int j = 0; j < MB; ++j)
      for (int v = 0; v < 4; ++v) {
        if (!Full && v >= nv)
          break;
        float *p = y + j * ldy + n + v * L;
        if (Full || v + 1 < nv || last == L)
          V::store(p, V::add(V::load(p), acc[j][v]));
        else
          V::storePartial(p, V::add(V::loadPartial(p, last), acc[j][v]), last);
      }
  }

  template <int MB>
  static void upRows(const float *t, int64_t ldt, const LoraMatrix &bt,
                     int64_t n0, int64_t n1, float scale, float *y,
                     int64_t ldy) {
    int64_t n = n0;
    for (; n + 4 * L <= n1; n += 4 * L)
      upBlock<MB, true>(t, ldt, bt, n, 4 * L, scale, y, ldy);
    if (n < n1)
      upBlock<MB, false>(t, ldt, bt, n, n1 - n, scale, y, ldy);
  }

  static void up(const float *t, int64_t M, int64_t ldt, const LoraMatrix &bt,
                 int64_t n0, int64_t n1, float scale, float *y, int64_t ldy) {
    int64_t m = 0;
    for (; m + 4 <= M; m += 4)
      upRows<4>(t + m * ldt, ldt, bt, n0, n1, scale, y + m * ldy, ldy);
    switch (M - m) {
    case 3:
      upRows<3>(t + m * ldt, ldt, bt, n0, n1, scale, y + m * ldy, ldy);
      break;
    case 2:
      upRows<2>(t + m * ldt, ldt, bt, n0, n1, scale, y + m * ldy, ldy);
      break;
    case 1:
      upRows<1>(t + m * ldt, ldt, bt, n0, n1, scale, y + m * ldy, ldy);
      break;
    default:
      break;
    }
  }
};

} // namespace fm::kernels::detail
