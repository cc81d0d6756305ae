// Portable qmatmul: f32 activations, each weight group decoded into a
// small buffer and dotted with x. The reference the SIMD paths are tested
// against.
#include "kernels/matmul.h" // halfToFloat
#include "kernels/qmatmul_isa.h"

#include <cstring>

namespace fm::kernels::qdetail {
namespace {

// Partial sums per dot product (fills a vector register, hides latency).
constexpr int kLanes = 8;
// Rows of x that share one decode of a weight group.
constexpr int64_t kRowsPerDecode = 16;

float dot(const float *a, const float *b, int n) {
  float acc[kLanes] = {};
  for (int k = 0; k < n; k += kLanes) // n is a multiple of 32
    for (int l = 0; l < kLanes; ++l)
      acc[l] += a[k + l] * b[k + l];
  float s = 0.0f;
  for (int l = 0; l < kLanes; ++l)
    s += acc[l];
  return s;
}

float sum(const float *a, int n) {
  float acc[kLanes] = {};
  for (int k = 0; k < n; k += kLanes)
    for (int l = 0; l < kLanes; ++l)
      acc[l] += a[k + l];
  float s = 0.0f;
  for (int l = 0; l < kLanes; ++l)
    s += acc[l];
  return s;
}

// The group's q - c (balanced) or q (affine) in input order.
void decodeGroup(const uint8_t *quants, QuantFormat f, int64_t g, float bias,
                 float *out) {
  const int64_t U = quantUnitInputs(f), unitBytes = U * f.bits / 8;
  const int planes = 8 / f.bits, mask = (1 << f.bits) - 1;
  for (int64_t u = 0; u < f.group / U; ++u) {
    const uint8_t *unit = quants + (g * f.group / U + u) * unitBytes;
    float *o = out + u * U;
    for (int j = 0; j < planes; ++j)
      for (int64_t k = 0; k < unitBytes; ++k)
        o[j * unitBytes + k] =
            static_cast<float>((unit[k] >> (f.bits * j)) & mask) - bias;
  }
}

void rangeGeneric(const Params &p, int64_t m0, int64_t m1, int64_t n0,
                  int64_t n1) {
  const QuantFormat f = p.f;
  const int64_t K = p.K, groups = quantGroups(f, K);
  const bool affine = f.grid == QuantGrid::Affine;
  const float bias = affine ? 0.0f : balancedCenter(f.bits);
  const float *x = static_cast<const float *>(p.act);
  const int64_t ldx = p.actStride / static_cast<int64_t>(sizeof(float));
  float decoded[128];
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t *row = p.w + n * p.rowBytes;
    const uint8_t *scales = row + quantBytes(f, K);
    const uint8_t *mins = scales + 2 * groups;
    for (int64_t mb = m0; mb < m1; mb += kRowsPerDecode) {
      const int64_t me = mb + kRowsPerDecode < m1 ? mb + kRowsPerDecode : m1;
      float acc[kRowsPerDecode] = {};
      for (int64_t g = 0; g < groups; ++g) {
        uint16_t sh, mh = 0;
        std::memcpy(&sh, scales + 2 * g, 2);
        if (affine)
          std::memcpy(&mh, mins + 2 * g, 2);
        const float s = halfToFloat(sh), mn = halfToFloat(mh);
        decodeGroup(row, f, g, bias, decoded);
        for (int64_t m = mb; m < me; ++m) {
          const float *xg = x + m * ldx + g * f.group;
          float v = s * dot(decoded, xg, f.group);
          if (affine)
            v += mn * sum(xg, f.group);
          acc[m - mb] += v;
        }
      }
      for (int64_t m = mb; m < me; ++m) {
        float *out = p.y + m * p.ldy + n;
        *out = p.accumulate ? *out + acc[m - mb] : acc[m - mb];
      }
    }
  }
}

} // namespace

const QMatmulIsa kQMatmulGeneric = {nullptr, &rangeGeneric, nullptr,
                                     "generic"};

} // namespace fm::kernels::qdetail
