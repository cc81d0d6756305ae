// NEON qgemm for AArch64. Per 64-input block a panel's 16 outputs are
// unpacked once into tile rows, then a micro-tile of 4 prepared x rows x 16
// outputs runs one of:
//  - sdot by lane (vdotq_laneq_s32) per tile row and 4 outputs where the
//    compiler targets the dot-product extension (__ARM_FEATURE_DOTPROD),
//    else smull/smlal and pairwise adds; s8 x s8, so 8-bit quants are made
//    signed (q - 128, the offset o of qgemm_isa.h);
//  - with i8mm (__ARM_FEATURE_MATMUL_INT8; GemmPath::NeonI8mm) usmmla: u8
//    quants of 2 outputs x 8 inputs against s8 x of 2 rows x 8 inputs into a
//    2 x 2 int32 block; the unpack pairs tile rows t, t+1 for it.
// The block's dots are folded into f32 outputs with the group scales.
#include "kernels/qgemm_prepare.h"

#include <arm_neon.h>

#include <cstring>

namespace fm::kernels::gdetail {
namespace {

struct Tag {};

constexpr int kRows = 4;

// Group g's 16 scales and mo (qgemm_isa.h) for offset o, as 4 x 4 lanes.
void scales(const uint8_t *panel, const PanelGeometry &geo, QuantFormat f,
            int64_t g, float o, float32x4_t (&s)[4], float32x4_t (&mo)[4]) {
  const bool affine = f.grid == QuantGrid::Affine;
  const float c = balancedCenter(f.bits);
  for (int i = 0; i < 4; ++i) {
    s[i] = vcvt_f32_f16(vreinterpret_f16_u8(
        vld1_u8(panel + geo.scaleOffset + g * 32 + 8 * i)));
    mo[i] = affine ? vfmaq_n_f32(vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(
                                     panel + geo.minOffset + g * 32 + 8 * i))),
                                 s[i], o)
                   : vmulq_n_f32(s[i], o - c);
  }
}

// acc[16] += dot * dx * s (+ mo * xs at a group's end).
inline void fold(float *acc, const int32x4_t (&dot)[4], float dx,
                 const float32x4_t (&s)[4], bool groupEnd,
                 const float32x4_t (&mo)[4], float xs) {
  for (int i = 0; i < 4; ++i) {
    float32x4_t a = vld1q_f32(acc + 4 * i);
    a = vfmaq_f32(a, vmulq_n_f32(vcvtq_f32_s32(dot[i]), dx), s[i]);
    if (groupEnd)
      a = vfmaq_n_f32(a, mo[i], xs);
    vst1q_f32(acc + 4 * i, a);
  }
}

#if defined(__ARM_FEATURE_MATMUL_INT8)
// i8mm: tile rows t, t+1 (t even) as 8 registers of 2 outputs x 8 inputs:
// out[(t / 2) * 128 + 16 * q] = outputs 2q, 2q + 1.
template <int Bits> void unpackPairs(const uint8_t *block, uint8_t *out) {
  constexpr int V = 2 * Bits, P = 8 / Bits;
  uint8_t rows[kTileRows * 64];
  const uint8x16_t mask = vdupq_n_u8((1 << Bits) - 1);
  for (int v = 0; v < V; ++v)
    for (int i = 0; i < 4; ++i) {
      const uint8x16_t vec = vld1q_u8(block + 64 * v + 16 * i);
      for (int j = 0; j < P; ++j) {
        uint8x16_t t = vec;
        if constexpr (Bits < 8)
          t = vandq_u8(vshlq_u8(vec, vdupq_n_s8(static_cast<int8_t>(-Bits * j))),
                       mask);
        vst1q_u8(rows + 64 * (v + V * j) + 16 * i, t);
      }
    }
  for (int t = 0; t < kTileRows; t += 2)
    for (int i = 0; i < 4; ++i) {
      const uint32x4_t a = vreinterpretq_u32_u8(vld1q_u8(rows + 64 * t + 16 * i));
      const uint32x4_t b =
          vreinterpretq_u32_u8(vld1q_u8(rows + 64 * (t + 1) + 16 * i));
      vst1q_u8(out + (t / 2) * 128 + 32 * i, vreinterpretq_u8_u32(vzip1q_u32(a, b)));
      vst1q_u8(out + (t / 2) * 128 + 32 * i + 16,
               vreinterpretq_u8_u32(vzip2q_u32(a, b)));
    }
}

// 4 prepared rows (2 pairs) x 16 outputs (8 pairs) over `pairs` tile-row
// pairs; dots[r][i] = outputs 4i..4i+3 of row r.
inline void microTileI8mm(const int8_t *x, int64_t ldx, const uint8_t *w,
                          int pairs, int32x4_t (&dots)[kRows][4]) {
  int32x4_t acc[2][8];
  for (auto &rp : acc)
    for (auto &a : rp)
      a = vdupq_n_s32(0);
  for (int t = 0; t < pairs; ++t) {
    int8x16_t xp[2];
    for (int rp = 0; rp < 2; ++rp)
      xp[rp] = vcombine_s8(vld1_s8(x + (2 * rp) * ldx + 8 * t),
                           vld1_s8(x + (2 * rp + 1) * ldx + 8 * t));
    for (int q = 0; q < 8; ++q) {
      const uint8x16_t wq = vld1q_u8(w + 128 * t + 16 * q);
      acc[0][q] = vusmmlaq_s32(acc[0][q], wq, xp[0]);
      acc[1][q] = vusmmlaq_s32(acc[1][q], wq, xp[1]);
    }
  }
  // acc[rp][q] = [(2q, 2rp), (2q, 2rp+1), (2q+1, 2rp), (2q+1, 2rp+1)].
  for (int rp = 0; rp < 2; ++rp)
    for (int i = 0; i < 4; ++i) {
      dots[2 * rp][i] = vuzp1q_s32(acc[rp][2 * i], acc[rp][2 * i + 1]);
      dots[2 * rp + 1][i] = vuzp2q_s32(acc[rp][2 * i], acc[rp][2 * i + 1]);
    }
}
#endif

// sdot / smull: the 16 tile rows as int8 (8-bit quants minus 128).
template <int Bits> void unpackRows(const uint8_t *block, int8_t *rows) {
  constexpr int V = 2 * Bits, P = 8 / Bits;
  const uint8x16_t mask = vdupq_n_u8((1 << Bits) - 1);
  for (int v = 0; v < V; ++v)
    for (int i = 0; i < 4; ++i) {
      const uint8x16_t vec = vld1q_u8(block + 64 * v + 16 * i);
      for (int j = 0; j < P; ++j) {
        uint8x16_t t;
        if constexpr (Bits == 8)
          t = veorq_u8(vec, vdupq_n_u8(0x80));
        else
          t = vandq_u8(vshlq_u8(vec, vdupq_n_s8(static_cast<int8_t>(-Bits * j))),
                       mask);
        vst1q_s8(rows + 64 * (v + V * j) + 16 * i, vreinterpretq_s8_u8(t));
      }
    }
}

inline int32x4_t dot4(int32x4_t acc, int8x16_t w, int8x16_t xq, int lane) {
#if defined(__ARM_FEATURE_DOTPROD)
  switch (lane) {
  case 0:
    return vdotq_laneq_s32(acc, w, xq, 0);
  case 1:
    return vdotq_laneq_s32(acc, w, xq, 1);
  case 2:
    return vdotq_laneq_s32(acc, w, xq, 2);
  default:
    return vdotq_laneq_s32(acc, w, xq, 3);
  }
#else
  // |products| <= 128 * 127: int16; lane i = bytes 4i..4i+3, as sdot.
  int32_t quad;
  std::memcpy(&quad, reinterpret_cast<const int8_t *>(&xq) + 4 * lane, 4);
  const int8x16_t xb = vreinterpretq_s8_s32(vdupq_n_s32(quad));
  const int16x8_t lo = vmull_s8(vget_low_s8(w), vget_low_s8(xb));
  const int16x8_t hi = vmull_high_s8(w, xb);
  return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)));
#endif
}

// 4 prepared rows x 16 outputs over `tiles` tile rows (a multiple of 4).
inline void microTileDot(const int8_t *x, int64_t ldx, const int8_t *rows,
                         int tiles, int32x4_t (&dots)[kRows][4]) {
  for (auto &r : dots)
    for (auto &a : r)
      a = vdupq_n_s32(0);
  for (int t0 = 0; t0 < tiles; t0 += 4) {
    int8x16_t xq[kRows];
    for (int r = 0; r < kRows; ++r)
      xq[r] = vld1q_s8(x + r * ldx + 4 * t0);
    for (int t = t0; t < t0 + 4; ++t)
      for (int i = 0; i < 4; ++i) {
        const int8x16_t w = vld1q_s8(rows + 64 * t + 16 * i);
        for (int r = 0; r < kRows; ++r)
          dots[r][i] = dot4(dots[r][i], w, xq[r], t - t0);
      }
  }
}

template <int D, int Bits, bool I8mm>
void rangeBits(const Params &p, int64_t m0, int64_t m1, int64_t p0,
               int64_t p1) {
  const QuantFormat f = p.f;
  const Act &a = p.act;
  const int U = a.unit;
  const int halves = kPanelBlockInputs / U, tilesPerHalf = U / 4;
  const int64_t rows = m1 - m0;
  const int64_t prepRows = (rows * D + kRows - 1) / kRows * kRows;
  // usmmla takes the quants unsigned; sdot needs 8-bit ones signed.
  const float offset = !I8mm && Bits == 8 ? 128.0f : 0.0f;
  alignas(16) uint8_t bb[kTileRows * 64];
  float acc[kMaxUnitRows * 16];
  for (int64_t pi = p0; pi < p1; ++pi) {
    const uint8_t *panel = p.w + pi * p.geo.panelBytes;
    std::memset(acc, 0, sizeof(float) * 16 * rows);
    for (int64_t b = 0; b < p.geo.blocks; ++b) {
      const uint8_t *block = panel + b * p.geo.blockBytes;
#if defined(__ARM_FEATURE_MATMUL_INT8)
      if constexpr (I8mm)
        unpackPairs<Bits>(block, bb);
      else
#endif
        unpackRows<Bits>(block, reinterpret_cast<int8_t *>(bb));
      for (int h = 0; h < halves; ++h) {
        const int64_t u = b * halves + h, k0 = u * U, g = k0 / f.group;
        const bool groupEnd = (k0 + U) % f.group == 0;
        float32x4_t s[4], mo[4];
        scales(panel, p.geo, f, g, offset, s, mo);
        for (int64_t r0 = 0; r0 < prepRows; r0 += kRows) {
          int32x4_t dots[kRows][4];
          const int8_t *x = a.xq + (m0 * D + r0) * a.ldx + k0;
#if defined(__ARM_FEATURE_MATMUL_INT8)
          if constexpr (I8mm)
            microTileI8mm(x, a.ldx, bb + 128 * (tilesPerHalf / 2) * h,
                          tilesPerHalf / 2, dots);
          else
#endif
            microTileDot(x, a.ldx,
                         reinterpret_cast<const int8_t *>(bb) + 64 * tilesPerHalf * h,
                         tilesPerHalf, dots);
          for (int i = 0; i < kRows / D; ++i) {
            const int64_t m = m0 + r0 / D + i;
            if (m >= m1)
              break;
            int32x4_t d[4];
            for (int q = 0; q < 4; ++q)
              d[q] = D == 2 ? vaddq_s32(vshlq_s32(dots[D * i][q],
                                                  vdupq_n_s32(a.hiShift)),
                                        dots[D * i + 1][q])
                            : dots[i][q];
            fold(acc + (m - m0) * 16, d, a.dx[m * a.ldd + u], s, groupEnd, mo,
                 groupEnd ? a.xs[m * a.lds + g] : 0.0f);
          }
        }
      }
    }
    const int64_t n0 = pi * kPanelRows;
    const int64_t valid = p.N - n0 < kPanelRows ? p.N - n0 : kPanelRows;
    for (int64_t m = m0; m < m1; ++m)
      for (int64_t r = 0; r < valid; ++r) {
        float *out = p.y + m * p.ldy + n0 + r;
        const float v = acc[(m - m0) * 16 + r];
        *out = p.accumulate ? *out + v : v;
      }
  }
}

template <int D, bool I8mm>
void range(const Params &p, int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
  switch (p.f.bits) {
  case 2:
    return rangeBits<D, 2, I8mm>(p, m0, m1, p0, p1);
  case 4:
    return rangeBits<D, 4, I8mm>(p, m0, m1, p0, p1);
  default:
    return rangeBits<D, 8, I8mm>(p, m0, m1, p0, p1);
  }
}

} // namespace

const GemmIsa kGemmNeon[2] = {
    {&Prepare<Tag>::rows<2>, &range<2, false>, nullptr, nullptr},
    {&Prepare<Tag>::rows<1>, &range<1, false>, nullptr, nullptr}};

#if defined(__ARM_FEATURE_MATMUL_INT8)
const GemmIsa kGemmNeonI8mm[2] = {
    {&Prepare<Tag>::rows<2>, &range<2, true>, nullptr, nullptr},
    {&Prepare<Tag>::rows<1>, &range<1, true>, nullptr, nullptr}};
#endif

} // namespace fm::kernels::gdetail
