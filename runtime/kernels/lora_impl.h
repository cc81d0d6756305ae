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
//
// Decode (one row of x) has its own loops, as it is bound by the bytes of
// the matrices: the q8 down sums x·q per group in integers-as-floats and
// scales each group's sum once (Σ_k x_k (q_k − c) s = s (Σ x_k q_k − c Σ x_k)),
// and the up streams 8 rows of Bᵀ at a time, front to back, adding them to
// y (which stays in L1) with the group scales folded into one coefficient
// per row and group, so every weight costs one widening and one FMA.
#pragma once

#include "kernels/lora_isa.h"
#include "kernels/matmul.h"
#include "kernels/qformat.h"

#include <cstdint>
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

  // Groups whose scales are widened at a time (a stack buffer per row).
  static constexpr int64_t kScaleChunk = 64;
  // How far ahead of a q8 decode loop its rows are prefetched (a hint: it
  // may point past a matrix's end).
  static constexpr int64_t kPrefetchBytes = 768;

  // Prefetches the line `offset` bytes from `base`. The address may lie
  // past the matrix's end (a prefetch never faults), so it is formed as an
  // integer: pointer arithmetic past an object's end is undefined.
  static void prefetchAt(const uint8_t *base, int64_t offset) {
    V::prefetch(reinterpret_cast<const void *>(
        reinterpret_cast<uintptr_t>(base) + uintptr_t(offset)));
  }

  // Prefetches bytes [b0, b1) of rows [r0, r0 + rows) of a q8 matrix from
  // `q` (a hint: it may point past the matrix's end).
  static void prefetchRows(const uint8_t *q, int64_t rowBytes, int64_t r0,
                           int64_t rows, int64_t b0, int64_t b1) {
    for (int64_t r = r0; r < r0 + rows; ++r)
      for (int64_t b = b0; b < b1; b += 64)
        prefetchAt(q, r * rowBytes + b);
  }

  static void widenScales(const uint8_t *halves, int64_t n, float *out) {
    const uint16_t *h = reinterpret_cast<const uint16_t *>(halves);
    int64_t j = 0;
    for (; j + L <= n; j += L)
      V::store(out + j, V::load(h + j));
    if (j < n)
      V::storePartial(out + j, V::loadPartial(h + j, int(n - j)),
                      int(n - j));
  }

  // Decode, q8: t[i + r] = dot(x, a row i + r) for r < RB.
  template <int RB>
  static void downQ8Decode(const float *x, const LoraMatrix &a, int64_t i,
                           float *t) {
    const int64_t K = a.cols, group = a.group, groups = K / group;
    const int64_t rowBytes = K + 2 * groups;
    const uint8_t *q = static_cast<const uint8_t *>(a.data) + i * rowBytes;
    const float center = -balancedCenter(8);
    Reg total[RB];
    for (int r = 0; r < RB; ++r)
      total[r] = V::zero();
    // The next rows' scales, read first when they start: fetched now, as
    // their quants are by the loop's run-on prefetch.
    prefetchRows(q, rowBytes, RB, RB, K, rowBytes);
    alignas(64) float scales[RB][kScaleChunk];
    for (int64_t g0 = 0; g0 < groups; g0 += kScaleChunk) {
      const int64_t gn = groups - g0 < kScaleChunk ? groups - g0 : kScaleChunk;
      for (int r = 0; r < RB; ++r)
        widenScales(q + r * rowBytes + K + 2 * g0, gn, scales[r]);
      for (int64_t g = 0; g < gn; ++g) {
        const int64_t k0 = (g0 + g) * group;
        // Every row's sum starts at −c·Σx over the group (lane-wise).
        Reg xsum = V::load(x + k0);
        for (int64_t k = k0 + L; k < k0 + group; k += L)
          xsum = V::add(xsum, V::load(x + k));
        const Reg start = V::mul(xsum, V::broadcast(center));
        Reg acc[RB];
        for (int r = 0; r < RB; ++r)
          acc[r] = start;
        // The rows are RB streams: the hardware prefetcher alone leaves
        // the loop waiting on memory (a third slower, measured). Past a
        // row's end each stream runs on into its row of the next RB rows
        // (the next call), so those do not start cold.
        const int64_t ahead = k0 + kPrefetchBytes;
        const int64_t wrap = ahead >= rowBytes ? (RB - 1) * rowBytes : 0;
        for (int r = 0; r < RB; ++r)
          prefetchAt(q, r * rowBytes + ahead + wrap);
        for (int64_t k = k0; k < k0 + group; k += L) {
          const Reg xv = V::load(x + k);
          for (int r = 0; r < RB; ++r)
            acc[r] = V::fma(xv, V::loadU8(q + r * rowBytes + k), acc[r]);
        }
        for (int r = 0; r < RB; ++r)
          total[r] = V::fma(V::broadcast(scales[r][g]), acc[r], total[r]);
      }
    }
    if constexpr (RB == 4) {
      V::sum4(total, t + i);
    } else if constexpr (RB == 8) {
      V::sum4(total, t + i);
      V::sum4(total + 4, t + i + 4);
    } else {
      for (int r = 0; r < RB; ++r)
        t[i + r] = V::sum(total[r]);
    }
  }

  static void down(const float *x, int64_t M, int64_t ldx, const LoraMatrix &a,
                   int64_t i0, int64_t i1, float *t, int64_t ldt) {
    if (M == 1 && a.q8) {
      // The loops prefetch from kPrefetchBytes ahead: the heads of the
      // first rows are fetched here, all at once, not one miss at a time.
      const int64_t rowBytes = a.cols + 2 * (a.cols / a.group);
      const uint8_t *q = static_cast<const uint8_t *>(a.data) + i0 * rowBytes;
      const int64_t heads = i1 - i0 < 8 ? i1 - i0 : 8;
      prefetchRows(q, rowBytes, 0, heads, 0, kPrefetchBytes);
      prefetchRows(q, rowBytes, 0, heads, a.cols, rowBytes);
      int64_t i = i0;
      for (; i + 8 <= i1; i += 8)
        downQ8Decode<8>(x, a, i, t);
      for (; i + 4 <= i1; i += 4)
        downQ8Decode<4>(x, a, i, t);
      for (; i < i1; ++i)
        downQ8Decode<1>(x, a, i, t);
      return;
    }
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

  // Decode: y[n] += Σ_r c_r · bt[i + r][n] for n in [n0, n1), RB rows of
  // bt front to back; c_r = scale · t[i + r].
  template <int RB>
  static void upDecodeRows(const float *t, const LoraMatrix &bt, int64_t i,
                           int64_t n0, int64_t n1, float scale, float *y) {
    Reg c[RB];
    if (!bt.q8) {
      const uint16_t *w[RB];
      for (int r = 0; r < RB; ++r) {
        c[r] = V::broadcast(scale * t[i + r]);
        w[r] = static_cast<const uint16_t *>(bt.data) + (i + r) * bt.cols;
      }
      int64_t n = n0;
      for (; n + L <= n1; n += L) {
        Reg acc = V::load(y + n);
        for (int r = 0; r < RB; ++r)
          acc = V::fma(c[r], V::load(w[r] + n), acc);
        V::store(y + n, acc);
      }
      if (n < n1) {
        const int count = static_cast<int>(n1 - n);
        Reg acc = V::loadPartial(y + n, count);
        for (int r = 0; r < RB; ++r)
          acc = V::fma(c[r], V::loadPartial(w[r] + n, count), acc);
        V::storePartial(y + n, acc, count);
      }
      return;
    }
    // q8: (q − ctr)·s·c_r = q·(s·c_r) − ctr·(s·c_r): one coefficient per
    // row and group, their centred sum added to y once per group.
    const int64_t N = bt.cols, group = bt.group;
    const int64_t rowBytes = N + 2 * (N / group);
    const uint8_t *q = static_cast<const uint8_t *>(bt.data) + i * rowBytes;
    float cs[RB];
    for (int r = 0; r < RB; ++r)
      cs[r] = scale * t[i + r];
    alignas(64) float coef[RB][kScaleChunk];
    alignas(64) float bias[kScaleChunk];
    const int64_t gEnd = (n1 + group - 1) / group; // n1 = N or a unit edge
    prefetchRows(q, rowBytes, RB, RB, N + 2 * (n0 / group),
                 N + 2 * gEnd);
    for (int64_t g0 = n0 / group; g0 < gEnd; g0 += kScaleChunk) {
      const int64_t gn = gEnd - g0 < kScaleChunk ? gEnd - g0 : kScaleChunk;
      for (int r = 0; r < RB; ++r)
        widenScales(q + r * rowBytes + N + 2 * g0, gn, coef[r]);
      for (int64_t g = 0; g < gn; ++g) {
        float b = 0;
        for (int r = 0; r < RB; ++r) {
          coef[r][g] *= cs[r];
          b += coef[r][g];
        }
        bias[g] = -balancedCenter(8) * b;
      }
      for (int64_t g = 0; g < gn; ++g) {
        for (int r = 0; r < RB; ++r)
          c[r] = V::broadcast(coef[r][g]);
        const Reg bv = V::broadcast(bias[g]);
        int64_t n = (g0 + g) * group, end = n + group;
        n = n < n0 ? n0 : n;
        end = end > n1 ? n1 : end;
        // As the q8 down: past the range's end, into this row's range in
        // the next RB rows.
        const int64_t ahead = n + kPrefetchBytes;
        const int64_t at = ahead < n1 ? ahead : ahead - n1 + n0 + RB * rowBytes;
        for (int r = 0; r < RB; ++r)
          prefetchAt(q, r * rowBytes + at);
        for (; n < end; n += L) {
          Reg acc = V::add(V::load(y + n), bv);
          for (int r = 0; r < RB; ++r)
            acc = V::fma(c[r], V::loadU8(q + r * rowBytes + n), acc);
          V::store(y + n, acc);
        }
      }
    }
  }

  static void up(const float *t, int64_t M, int64_t ldt, const LoraMatrix &bt,
                 int64_t n0, int64_t n1, float scale, float *y, int64_t ldy) {
    if (M == 1) {
      // 8 rows per pass over y: half the loads and stores of y of 4.
      if (bt.q8) { // the first rows' heads and scales, all at once
        const int64_t N = bt.cols, rowBytes = N + 2 * (N / bt.group);
        const int64_t heads = bt.rows < 8 ? bt.rows : 8;
        const uint8_t *q = static_cast<const uint8_t *>(bt.data);
        const int64_t head = n1 - n0 < kPrefetchBytes ? n1 - n0 : kPrefetchBytes;
        prefetchRows(q, rowBytes, 0, heads, n0, n0 + head);
        prefetchRows(q, rowBytes, 0, heads, N + 2 * (n0 / bt.group),
                     N + 2 * ((n1 + bt.group - 1) / bt.group));
      }
      int64_t i = 0;
      for (; i + 8 <= bt.rows; i += 8)
        upDecodeRows<8>(t, bt, i, n0, n1, scale, y);
      for (; i + 4 <= bt.rows; i += 4)
        upDecodeRows<4>(t, bt, i, n0, n1, scale, y);
      for (; i < bt.rows; ++i)
        upDecodeRows<1>(t, bt, i, n0, n1, scale, y);
      return;
    }
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
