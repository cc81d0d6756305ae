// Portable qgemm over the Panel16 layout: int8 activations (the integer
// dots of the SIMD paths, in plain C++) and f32 activations (the weights
// decoded to f32). The fallback where no SIMD path runs, and a second
// reference in the tests.
#include "kernels/matmul.h" // halfToFloat
#include "kernels/qgemm_isa.h"
#include "kernels/qgemm_prepare.h"

#include <algorithm>
#include <cstring>

namespace fm::kernels::gdetail {
namespace {

struct GenericTag {};

// 16 rows x 64 inputs of a panel block as ints.
void decodeBlock(const uint8_t *block, int bits, int (&q)[kPanelRows][64]) {
  for (int r = 0; r < kPanelRows; ++r)
    for (int i = 0; i < kPanelBlockInputs; ++i)
      q[r][i] = panelQuantAt(block, bits, r, i);
}

template <int D>
void rangeInt(const Params &p, int64_t m0, int64_t m1, int64_t p0,
              int64_t p1) {
  const QuantFormat f = p.f;
  const Act &a = p.act;
  const int U = a.unit;
  // Units have at most kMaxUnitRows rows (qgemm.cpp): the accumulators fit
  // on the stack, so a call allocates nothing.
  float acc[kMaxUnitRows * kPanelRows];
  int32_t dots[kMaxUnitRows * kPanelRows];
  const int64_t rows = m1 - m0;
  int q[kPanelRows][64];
  float s[kPanelRows], mo[kPanelRows];
  for (int64_t pi = p0; pi < p1; ++pi) {
    const uint8_t *panel = p.w + pi * p.geo.panelBytes;
    std::fill(acc, acc + rows * kPanelRows, 0.0f);
    for (int64_t b = 0; b < p.geo.blocks; ++b) {
      decodeBlock(panel + b * p.geo.blockBytes, f.bits, q);
      for (int half = 0; half < kPanelBlockInputs / U; ++half) {
        const int64_t u = b * (kPanelBlockInputs / U) + half; // x block
        const int64_t k0 = u * U, g = k0 / f.group;
        panelScales(panel, p.geo, f, g, 0, s, mo);
        for (int64_t m = m0; m < m1; ++m) {
          const int8_t *x0 = a.xq + m * D * a.ldx + k0;
          for (int r = 0; r < kPanelRows; ++r) {
            int32_t dot = 0;
            for (int k = 0; k < U; ++k) {
              const int32_t xv =
                  D == 2 ? x0[k] * (1 << a.hiShift) + x0[a.ldx + k]
                         : int32_t(x0[k]);
              dot += q[r][half * U + k] * xv;
            }
            dots[(m - m0) * kPanelRows + r] = dot;
          }
          const float dx = a.dx[m * a.ldd + u];
          for (int r = 0; r < kPanelRows; ++r) {
            float &out = acc[(m - m0) * kPanelRows + r];
            out += static_cast<float>(dots[(m - m0) * kPanelRows + r]) * dx *
                   s[r];
            // The group's offset term, once, after its last block.
            if ((k0 + U) % f.group == 0)
              out += mo[r] * a.xs[m * a.lds + g];
          }
        }
      }
    }
    for (int64_t m = m0; m < m1; ++m)
      for (int r = 0; r < kPanelRows; ++r) {
        const int64_t n = pi * kPanelRows + r;
        if (n >= p.N)
          break;
        float *out = p.y + m * p.ldy + n;
        const float v = acc[(m - m0) * kPanelRows + r];
        *out = p.accumulate ? *out + v : v;
      }
  }
}

// f32 x: each block's weights decoded to floats and dotted with x.
void rangeF32(const Params &p, int64_t m0, int64_t m1, int64_t p0,
              int64_t p1) {
  const QuantFormat f = p.f;
  const bool affine = f.grid == QuantGrid::Affine;
  const float c = affine ? 0.0f : balancedCenter(f.bits);
  int q[kPanelRows][64];
  float wv[kPanelRows][64], s[kPanelRows], mo[kPanelRows];
  const int64_t rows = m1 - m0;
  float acc[kMaxUnitRows * kPanelRows];
  for (int64_t pi = p0; pi < p1; ++pi) {
    const uint8_t *panel = p.w + pi * p.geo.panelBytes;
    std::fill(acc, acc + rows * kPanelRows, 0.0f);
    for (int64_t b = 0; b < p.geo.blocks; ++b) {
      const int64_t k0 = b * kPanelBlockInputs;
      const int inputs = static_cast<int>(
          p.K - k0 < kPanelBlockInputs ? p.K - k0 : kPanelBlockInputs);
      decodeBlock(panel + b * p.geo.blockBytes, f.bits, q);
      for (int i = 0; i < inputs; i += f.group < 64 ? f.group : 64) {
        const int64_t g = (k0 + i) / f.group;
        uint16_t sh[kPanelRows], mh[kPanelRows];
        std::memcpy(sh, panel + p.geo.scaleOffset + g * 32, 32);
        if (affine)
          std::memcpy(mh, panel + p.geo.minOffset + g * 32, 32);
        for (int r = 0; r < kPanelRows; ++r) {
          s[r] = halfToFloat(sh[r]);
          mo[r] = affine ? halfToFloat(mh[r]) : 0.0f;
        }
        const int span = f.group < 64 ? f.group : 64;
        for (int r = 0; r < kPanelRows; ++r)
          for (int k = i; k < i + span; ++k)
            wv[r][k] = affine ? q[r][k] * s[r] + mo[r] : (q[r][k] - c) * s[r];
      }
      for (int64_t m = m0; m < m1; ++m) {
        const float *xm = p.xf + m * p.K + k0;
        for (int r = 0; r < kPanelRows; ++r) {
          float sum = 0.0f;
          for (int k = 0; k < inputs; ++k)
            sum += xm[k] * wv[r][k];
          acc[(m - m0) * kPanelRows + r] += sum;
        }
      }
    }
    for (int64_t m = m0; m < m1; ++m)
      for (int r = 0; r < kPanelRows; ++r) {
        const int64_t n = pi * kPanelRows + r;
        if (n >= p.N)
          break;
        float *out = p.y + m * p.ldy + n;
        const float v = acc[(m - m0) * kPanelRows + r];
        *out = p.accumulate ? *out + v : v;
      }
  }
}

} // namespace

void panelScales(const uint8_t *panel, const PanelGeometry &geo, QuantFormat f,
                 int64_t g, int offset, float *s, float *mo) {
  const bool affine = f.grid == QuantGrid::Affine;
  const float c = balancedCenter(f.bits);
  uint16_t sh[kPanelRows], mh[kPanelRows] = {};
  std::memcpy(sh, panel + geo.scaleOffset + g * 32, 32);
  if (affine)
    std::memcpy(mh, panel + geo.minOffset + g * 32, 32);
  for (int r = 0; r < kPanelRows; ++r) {
    s[r] = halfToFloat(sh[r]);
    mo[r] = affine ? halfToFloat(mh[r]) + static_cast<float>(offset) * s[r]
                   : s[r] * (static_cast<float>(offset) - c);
  }
}

const GemmIsa kGemmGeneric[2] = {
    {&Prepare<GenericTag>::rows<2>, &rangeInt<2>, nullptr, nullptr},
    {&Prepare<GenericTag>::rows<1>, &rangeInt<1>, nullptr, nullptr}};
const GemmIsa kGemmGenericF32 = {nullptr, &rangeF32, nullptr, nullptr};

} // namespace fm::kernels::gdetail
