// Internal: the int8-activation qmatmul, written once over a SIMD traits
// struct V and instantiated in each ISA's file with that file's flags
// (like matmul_tiles.h). Include only from qmatmul_<isa>.cpp.
//
// V provides (Q: vector of quant bytes, I: int32 vector, F: f32 vector,
// kLanes = kBytes / 4 lanes):
//   kName               the path's name (qmatmulPathName)
//   kBytes              quant bytes per step (64, 32 or 16)
//   kOffset8            o subtracted from 8-bit quants (0: u8 x s8 dots)
//   loadW(p), loadWPartial(p, n)           kBytes of quants (zero-filled)
//   plane<Bits, J>(w)   plane J of the quants (minus o when Bits == 8)
//   dot<Bits>(acc, planes, x) acc + (int32 lane i = sum over planes j and
//                        bytes 4i..4i+3 of plane[j] * x[64 * j + byte])
//   izero, shl8(i) = i * 256, iadd(a, b) (int32 lanes)
//   cvt, load, zero, fma(a, b, c) = a*b+c, fmsub(a, b, c) = a*b-c, hsum
//   Spread, spread(lanesPerGroup), scales(p, count, spread): `count` f16
//     scales at p, scale g repeated over lanesPerGroup lanes (count > 0)
//   dotHalf(h, f, n)     sum of halfToFloat(h[i]) * f[i]
//   prefetchL2(p)       the line at p into L2
//   kMatvecPassRows     rows of x the multi-row matvec takes per pass over
//                       a tile of w (its accumulators fit the registers)
#pragma once

#include "kernels/isa.h" // kMatvecMaxRows
#include "kernels/qmatmul_isa.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fm::kernels::qdetail {

#if defined(__GNUC__)
#define FM_Q_INLINE inline __attribute__((always_inline))
#else
#define FM_Q_INLINE inline
#endif

// ---------------------------------------------------------------------------
// Activation preparation (layout in qmatmul_isa.h).
// ---------------------------------------------------------------------------

// One row for a fixed (digits, bits, unit): constant trip counts, so that
// the compiler vectorizes and unrolls the per-unit loops (~0.4 ns per input
// on AVX-512: ~1 us for K = 2048, against ~40 us for the 2-bit matvec).
template <int Offset8, int D, int Bits, int U>
void prepareRowFixed(const float *x, int64_t K, QuantFormat f, uint8_t *out) {
  constexpr int P = 8 / Bits;
  constexpr int kUnitBytes = U * Bits / 8;
  constexpr int kUnitsPerSb = 64 / kUnitBytes;
  constexpr int kLanesPerUnit = kUnitBytes / 4;
  const ActLayout l = actLayout(f, K, D);
  const float o = Bits == 8 ? static_cast<float>(Offset8) : 0.0f;
  const float cgrid =
      f.grid == QuantGrid::Balanced ? balancedCenter(Bits) : 0.0f;
  const bool affine = f.grid == QuantGrid::Affine;
  float *gsum = reinterpret_cast<float *>(out + l.gsumOffset);
  if (affine)
    std::memset(gsum, 0, sizeof(float) * (K / f.group));
  // Inputs past K in the last superblock contribute nothing.
  if (K % (64 * P) != 0)
    std::memset(out + (l.superblocks - 1) * l.superblockBytes, 0,
                l.superblockBytes);
  for (int64_t u = 0; u < K / U; ++u) {
    const float *xu = x + u * U;
    // max |x| on the bits (an integer max reduction vectorizes).
    uint32_t amaxBits = 0;
    for (int k = 0; k < U; ++k) {
      uint32_t b;
      std::memcpy(&b, xu + k, 4);
      b &= 0x7fffffffu;
      amaxBits = b > amaxBits ? b : amaxBits;
    }
    float amax;
    std::memcpy(&amax, &amaxBits, 4);
    // Int8x2: the lane scale carries the second digit's 1/256.
    const float dx = amax / (D == 2 ? 127.0f * 256.0f : 127.0f);
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    // Clamped before the conversion: NaN or inf in x stay defined here
    // (and reach y through dx).
    int8_t q[D][U];
    int32_t v[U]; // the input's integer value, x ~= dx * v
    for (int k = 0; k < U; ++k) {
      const float t = std::fmin(std::fmax(xu[k] * inv, -127.0f), 127.0f);
      const float hi = std::nearbyint(t);
      q[0][k] = static_cast<int8_t>(static_cast<int>(hi));
      if constexpr (D == 2) {
        // |t - hi| <= 1/2; +-128 is clamped (AVX2 negates these bytes).
        const float lo = std::nearbyint(
            std::fmin(std::fmax((t - hi) * 256.0f, -127.0f), 127.0f));
        q[1][k] = static_cast<int8_t>(static_cast<int>(lo));
        v[k] = 256 * q[0][k] + q[1][k];
      } else {
        v[k] = q[0][k];
      }
    }
    const int64_t sb = u / kUnitsPerSb, uu = u % kUnitsPerSb;
    uint8_t *base = out + sb * l.superblockBytes;
    // Run j of the unit (inputs j*kUnitBytes..) sits in plane j at the
    // unit's bytes, digit after digit.
    for (int d = 0; d < D; ++d)
      for (int j = 0; j < P; ++j)
        std::memcpy(base + 64 * (P * d + j) + uu * kUnitBytes,
                    q[d] + j * kUnitBytes, kUnitBytes);
    float *dxLanes =
        reinterpret_cast<float *>(base + 64 * P * D) + uu * kLanesPerUnit;
    float *corr = dxLanes + 16;
    // Lane l sums bytes 4l..4l+3 of every plane: planes first (vector
    // adds), then groups of 4.
    int32_t byPosition[kUnitBytes];
    for (int k = 0; k < kUnitBytes; ++k) {
      int32_t sum = 0;
      for (int j = 0; j < P; ++j)
        sum += v[j * kUnitBytes + k];
      byPosition[k] = sum;
    }
    int total = 0;
    for (int lane = 0; lane < kLanesPerUnit; ++lane) {
      const int sum = byPosition[4 * lane] + byPosition[4 * lane + 1] +
                      byPosition[4 * lane + 2] + byPosition[4 * lane + 3];
      total += sum;
      dxLanes[lane] = dx;
      corr[lane] = (cgrid - o) * dx * static_cast<float>(sum);
    }
    if (affine)
      gsum[u * U / f.group] += dx * static_cast<float>(total);
  }
}

template <int Offset8, int D>
void prepareRow(const float *x, int64_t K, QuantFormat f, uint8_t *out) {
  const bool u64 = quantUnitInputs(f) == 64;
  switch (f.bits) {
  case 2:
    return u64 ? prepareRowFixed<Offset8, D, 2, 64>(x, K, f, out)
               : prepareRowFixed<Offset8, D, 2, 32>(x, K, f, out);
  case 4:
    return u64 ? prepareRowFixed<Offset8, D, 4, 64>(x, K, f, out)
               : prepareRowFixed<Offset8, D, 4, 32>(x, K, f, out);
  default:
    return u64 ? prepareRowFixed<Offset8, D, 8, 64>(x, K, f, out)
               : prepareRowFixed<Offset8, D, 8, 32>(x, K, f, out);
  }
}

template <int D> int64_t preparedRowBytes(QuantFormat f, int64_t K) {
  return actLayout(f, K, D).rowBytes;
}

// ---------------------------------------------------------------------------
// Kernel.
// ---------------------------------------------------------------------------

// Rows of w per matvec tile, and the prefill tile (rows of w x rows of x):
// 2 x 3 keeps int8x2's accumulators, planes and digits in registers (2 x 4
// measured ~8% slower at 2 bits, the same for int8; 2 x 2, 3 x 2, 3 x 3
// no better; bench/kernels BM_QPrefill).
constexpr int kMatvecRows = 4;
constexpr int kPrefillRowsN = 2, kPrefillRowsM = 3;
// Software prefetch of the matvec: a cursor runs linearly through the
// thread's rows, kPrefetchBytes beyond the end of the tile being read, at
// the tile's pace. Without it this machine's hardware prefetchers reach
// ~7-10 GB/s per core on the 4 interleaved row streams; with it 17-21
// (one row stream prefetched per row, rather than linearly, also stayed at
// ~10). Counting from the tile's end (not its start) matters for long rows
// (2048 x 6656 at 2 bits: 10 -> 17 GB/s on one core). Into L2, not L1:
// prefetching small footprints into L1 (x, the tile and the prefetched
// bytes under 20 KiB) was 15-30% slower on the Xeon with AMX (2048 x 2048
// cold, 2 threads: w4 17.4 -> 22.6 GB/s, w2 17.9 -> 19.8; larger
// footprints went to L2 already). The distance hardly matters there: 0 to
// 32 KiB beyond the tile were within 1 GB/s of each other.
constexpr int64_t kPrefetchBytes = 2048;

template <class V> struct Ctx {
  const uint8_t *w;
  int64_t rowBytes, quantBytes;
  int64_t fullSteps; // steps of V::kBytes quants
  int tailBytes;     // quants in the last, partial step
  int64_t groups;    // per row
  int lanesPerGroup; // int32 lanes (4 quant bytes) per weight group
  int groupShift;    // log2(lanesPerGroup): a shift, not a division per step
  int scalesPerStep; // max(1, kLanes / lanesPerGroup)
  typename V::Spread spread;
  bool affine;
  int64_t sbBytes, gsumOffset, actStride;
  bool accumulate;
};

template <class V, int D> Ctx<V> makeCtx(const Params &p) {
  Ctx<V> c;
  const ActLayout l = actLayout(p.f, p.K, D);
  c.w = p.w;
  c.rowBytes = p.rowBytes;
  c.quantBytes = quantBytes(p.f, p.K);
  c.fullSteps = c.quantBytes / V::kBytes;
  c.tailBytes = static_cast<int>(c.quantBytes % V::kBytes);
  c.groups = quantGroups(p.f, p.K);
  c.lanesPerGroup = p.f.group * p.f.bits / 32; // 2 .. 32, a power of 2
  c.groupShift = 0;
  while ((1 << c.groupShift) < c.lanesPerGroup)
    ++c.groupShift;
  c.scalesPerStep = std::max(1, V::kLanes / c.lanesPerGroup);
  c.spread = V::spread(std::min(c.lanesPerGroup, V::kLanes));
  c.affine = p.f.grid == QuantGrid::Affine;
  c.sbBytes = l.superblockBytes;
  c.gsumOffset = l.gsumOffset;
  c.actStride = p.actStride;
  c.accumulate = p.accumulate;
  return c;
}

// Matvec prefetch state: the next line to prefetch, how far the cursor
// may run per step, and where the thread's rows end.
struct Prefetcher {
  const uint8_t *cursor;
  int64_t perStep;
  const uint8_t *end;
};

template <class V, int D, int Bits, int NR, int MR, bool Tail>
FM_Q_INLINE void tileStep(const Ctx<V> &c, int64_t st, const uint8_t *w,
                          const uint8_t *x, typename V::F (&acc)[NR][MR]) {
  constexpr int P = 8 / Bits;
  constexpr int64_t kStepsPerSb = 64 / V::kBytes;
  using Q = typename V::Q;
  using I = typename V::I;
  using F = typename V::F;
  const int64_t sb = st / kStepsPerSb, ch = st % kStepsPerSb;
  const uint8_t *xs = x + sb * c.sbBytes + ch * V::kBytes;
  const int64_t firstGroup = (st * V::kLanes) >> c.groupShift;
  const int count = Tail ? static_cast<int>(std::min<int64_t>(
                               c.scalesPerStep, c.groups - firstGroup))
                         : c.scalesPerStep;
  for (int n = 0; n < NR; ++n) {
    const uint8_t *row = w + n * c.rowBytes;
    Q wv = Tail ? V::loadWPartial(row + st * V::kBytes, c.tailBytes)
                : V::loadW(row + st * V::kBytes);
    Q planes[P];
    if constexpr (P >= 1)
      planes[0] = V::template plane<Bits, 0>(wv);
    if constexpr (P >= 2)
      planes[1] = V::template plane<Bits, 1>(wv);
    if constexpr (P >= 4) {
      planes[2] = V::template plane<Bits, 2>(wv);
      planes[3] = V::template plane<Bits, 3>(wv);
    }
    const F s = V::scales(row + c.quantBytes + 2 * firstGroup, count, c.spread);
    for (int m = 0; m < MR; ++m) {
      const uint8_t *xm = xs + m * c.actStride;
      const int8_t *xq = reinterpret_cast<const int8_t *>(xm);
      I d = V::template dot<Bits>(V::izero(), planes, xq);
      // Int8x2 at 2 bits: the digits' two chains of 4 dots run side by
      // side (one chain of 8 measured ~4% slower in L2; at 4 and 8 bits
      // the chains are short and the extra add costs more).
      if constexpr (D == 2 && Bits == 2)
        d = V::iadd(V::shl8(d),
                    V::template dot<Bits>(V::izero(), planes, xq + 64 * P));
      else if constexpr (D == 2)
        d = V::template dot<Bits>(V::shl8(d), planes, xq + 64 * P);
      F t = V::fmsub(
          V::cvt(d), V::load(reinterpret_cast<const float *>(xm + 64 * P * D)),
          V::load(reinterpret_cast<const float *>(xm + 64 * P * D + 64)));
      acc[n][m] = V::fma(t, s, acc[n][m]);
    }
  }
}

// y[m * ldy + n] (+)= for the NR rows of w at `w` and MR prepared x rows at
// `x` (c.actStride apart).
template <class V, int D, int Bits, int NR, int MR>
void tile(const Ctx<V> &c, const uint8_t *w, const uint8_t *x, float *y,
          int64_t ldy, Prefetcher *pf) {
  typename V::F acc[NR][MR];
  for (int n = 0; n < NR; ++n)
    for (int m = 0; m < MR; ++m)
      acc[n][m] = V::zero();
  if (pf) {
    const uint8_t *target = w + NR * c.rowBytes + kPrefetchBytes;
    for (int64_t st = 0; st < c.fullSteps; ++st) {
      target += pf->perStep;
      const uint8_t *stop = target < pf->end ? target : pf->end;
      for (; pf->cursor < stop; pf->cursor += 64)
        V::prefetchL2(pf->cursor);
      tileStep<V, D, Bits, NR, MR, false>(c, st, w, x, acc);
    }
  } else {
    for (int64_t st = 0; st < c.fullSteps; ++st)
      tileStep<V, D, Bits, NR, MR, false>(c, st, w, x, acc);
  }
  if (c.tailBytes)
    tileStep<V, D, Bits, NR, MR, true>(c, c.fullSteps, w, x, acc);
  for (int n = 0; n < NR; ++n) {
    const uint8_t *row = w + n * c.rowBytes;
    for (int m = 0; m < MR; ++m) {
      float v = V::hsum(acc[n][m]);
      if (c.affine)
        v += V::dotHalf(
            reinterpret_cast<const uint16_t *>(row + c.quantBytes +
                                               2 * c.groups),
            reinterpret_cast<const float *>(x + m * c.actStride + c.gsumOffset),
            c.groups);
      float *out = y + m * ldy + n;
      *out = c.accumulate ? *out + v : v;
    }
  }
}

template <class V, int D, int Bits, int MR>
void prefillRows(const Ctx<V> &c, const uint8_t *x, float *y, int64_t ldy,
                 int64_t n0, int64_t n1) {
  int64_t n = n0;
  for (; n + kPrefillRowsN <= n1; n += kPrefillRowsN)
    tile<V, D, Bits, kPrefillRowsN, MR>(c, c.w + n * c.rowBytes, x, y + n, ldy,
                                        nullptr);
  for (; n < n1; ++n)
    tile<V, D, Bits, 1, MR>(c, c.w + n * c.rowBytes, x, y + n, ldy, nullptr);
}

// The matvec of 1 .. kMatvecMaxRows rows of x (isa.h): each tile of w rows
// is unpacked once per pass of up to V::kMatvecPassRows x rows, while the
// prefetcher streams w. Output (n, m) is tile()'s chain for weight row n and
// x row m whatever the tile's shape, so each row's result is bit for bit
// that of a call with that row alone (the decode step's).
//
// Rows of w per tile for MR rows of x: 4 accumulator chains at least (4 w
// rows for one x row, 2 for 2), one w row for more.
template <int MR> constexpr int matvecTileRows() {
  return MR == 1 ? kMatvecRows : MR == 2 ? 2 : 1;
}

// One tile of nr <= matvecTileRows rows of w for MR rows of x.
template <class V, int D, int Bits, int MR>
void matvecPass(const Ctx<V> &c, const uint8_t *x, float *y, int64_t ldy,
                const uint8_t *w, int nr, Prefetcher *pf) {
  constexpr int NR = matvecTileRows<MR>();
  if (nr == NR)
    return tile<V, D, Bits, NR, MR>(c, w, x, y, ldy, pf);
  for (int n = 0; n < nr; ++n)
    tile<V, D, Bits, 1, MR>(c, w + n * c.rowBytes, x, y + n, ldy, nullptr);
}

// Rows [n0, n1) of w for MR rows of x; the prefetcher runs to pfEnd (the
// range's end: across the blocks of the passes below).
template <class V, int D, int Bits, int MR>
void matvecRows(const Ctx<V> &c, const uint8_t *x, float *y, int64_t ldy,
                int64_t n0, int64_t n1, int64_t pfEnd) {
  constexpr int NR = matvecTileRows<MR>();
  const int64_t tileBytes = NR * c.rowBytes;
  const int64_t steps = c.fullSteps > 0 ? c.fullSteps : 1;
  Prefetcher pf{c.w + n0 * c.rowBytes + tileBytes + kPrefetchBytes,
                (tileBytes + steps - 1) / steps, c.w + pfEnd * c.rowBytes};
  for (int64_t n = n0; n < n1; n += NR) {
    const int nr = static_cast<int>(std::min<int64_t>(NR, n1 - n));
    matvecPass<V, D, Bits, MR>(c, x, y + n, ldy, c.w + n * c.rowBytes, nr,
                               nr == NR ? &pf : nullptr);
  }
}

// Rows of w per block when the rows of x take several passes: every pass
// over a block reads it from L2, not memory.
constexpr int64_t kMatvecBlockRows = 32;

// Rows [m0, m1) of x, at most kMatvecMaxRows, in passes of at most
// V::kMatvecPassRows rows, as equal as they can be; with several passes,
// all of them over one block of w rows before the next.
template <class V, int D, int Bits>
void matvec(const Params &p, const Ctx<V> &c, int64_t m0, int64_t m1,
            int64_t n0, int64_t n1) {
  constexpr int kPass = V::kMatvecPassRows;
  static_assert(kPass >= 1 && kPass <= kMatvecMaxRows, "bad pass rows");
  const uint8_t *act = static_cast<const uint8_t *>(p.act);
  // Passes of equal rows (8 = 4 + 4, not 6 + 2 where kPass is 6).
  const int64_t passes = (m1 - m0 + kPass - 1) / kPass;
  const int64_t rows = (m1 - m0 + passes - 1) / passes;
  auto pass = [&](int64_t m, int64_t b0, int64_t b1) {
    const uint8_t *x = act + m * p.actStride;
    float *y = p.y + m * p.ldy;
    switch (std::min<int64_t>(rows, m1 - m)) {
    case 1:
      return matvecRows<V, D, Bits, 1>(c, x, y, p.ldy, b0, b1, n1);
    case 2:
      return matvecRows<V, D, Bits, (kPass >= 2 ? 2 : 1)>(c, x, y, p.ldy, b0,
                                                           b1, n1);
    case 3:
      return matvecRows<V, D, Bits, (kPass >= 3 ? 3 : 1)>(c, x, y, p.ldy, b0,
                                                           b1, n1);
    case 4:
      return matvecRows<V, D, Bits, (kPass >= 4 ? 4 : 1)>(c, x, y, p.ldy, b0,
                                                           b1, n1);
    case 5:
      return matvecRows<V, D, Bits, (kPass >= 5 ? 5 : 1)>(c, x, y, p.ldy, b0,
                                                           b1, n1);
    case 6:
      return matvecRows<V, D, Bits, (kPass >= 6 ? 6 : 1)>(c, x, y, p.ldy, b0,
                                                           b1, n1);
    case 7:
      return matvecRows<V, D, Bits, (kPass >= 7 ? 7 : 1)>(c, x, y, p.ldy, b0,
                                                           b1, n1);
    default:
      return matvecRows<V, D, Bits, (kPass >= 8 ? 8 : 1)>(c, x, y, p.ldy, b0,
                                                           b1, n1);
    }
  };
  if (m1 - m0 <= kPass)
    return pass(m0, n0, n1);
  for (int64_t b0 = n0; b0 < n1; b0 += kMatvecBlockRows) {
    const int64_t b1 = std::min(b0 + kMatvecBlockRows, n1);
    for (int64_t m = m0; m < m1; m += rows)
      pass(m, b0, b1);
  }
}

template <class V, int D, int Bits>
void rangeBits(const Params &p, int64_t m0, int64_t m1, int64_t n0,
               int64_t n1) {
  const Ctx<V> c = makeCtx<V, D>(p);
  const uint8_t *act = static_cast<const uint8_t *>(p.act);
  if (m1 - m0 <= kMatvecMaxRows)
    return matvec<V, D, Bits>(p, c, m0, m1, n0, n1);
  // x rows outer: a tile's MR prepared rows stay in L1 while the block's
  // weight rows stream from L2.
  int64_t m = m0;
  for (; m + kPrefillRowsM <= m1; m += kPrefillRowsM)
    prefillRows<V, D, Bits, kPrefillRowsM>(c, act + m * p.actStride,
                                           p.y + m * p.ldy, p.ldy, n0, n1);
  const uint8_t *x = act + m * p.actStride;
  float *y = p.y + m * p.ldy;
  static_assert(kPrefillRowsM == 3, "the remainder is 0, 1 or 2 rows");
  switch (m1 - m) {
  case 2:
    prefillRows<V, D, Bits, 2>(c, x, y, p.ldy, n0, n1);
    break;
  case 1:
    prefillRows<V, D, Bits, 1>(c, x, y, p.ldy, n0, n1);
    break;
  default:
    break;
  }
}

template <class V, int D>
void range(const Params &p, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  switch (p.f.bits) {
  case 2:
    return rangeBits<V, D, 2>(p, m0, m1, n0, n1);
  case 4:
    return rangeBits<V, D, 4>(p, m0, m1, n0, n1);
  default:
    return rangeBits<V, D, 8>(p, m0, m1, n0, n1);
  }
}

/// An ISA's pair of tables: [0] Int8x2 activations, [1] Int8.
template <class V> struct IsaPair {
  static constexpr QMatmulIsa kTables[2] = {
      {&prepareRow<V::kOffset8, 2>, &range<V, 2>, &preparedRowBytes<2>,
       V::kName},
      {&prepareRow<V::kOffset8, 1>, &range<V, 1>, &preparedRowBytes<1>,
       V::kName}};
};

} // namespace fm::kernels::qdetail
