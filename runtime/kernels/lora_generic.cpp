// Portable LoRA products: each row of a matrix is decoded 64 values at a
// time into floats (f16 widened, q8 scaled per group) and used for every
// row of x or t in the block, in loops compilers vectorize.
#include "kernels/lora_isa.h"

#include "kernels/matmul.h"
#include "kernels/qformat.h"

#include <cstring>

namespace fm::kernels::detail {
namespace {

constexpr int64_t kChunk = 64;
// Rows of x (or t) that share one decoded chunk.
constexpr int64_t kRowsM = 4;

// Values [k0, k0 + n) of row `row` of m (n <= kChunk; for q8, k0 is a
// multiple of min(group, kChunk), so a chunk lies in one group).
void decode(const LoraMatrix &m, int64_t row, int64_t k0, int64_t n,
            float *out) {
  if (!m.q8) {
    const uint16_t *w = static_cast<const uint16_t *>(m.data) + row * m.cols;
    for (int64_t j = 0; j < n; ++j)
      out[j] = halfToFloat(w[k0 + j]);
    return;
  }
  const QuantFormat f{8, m.group, QuantGrid::Balanced};
  const uint8_t *base =
      static_cast<const uint8_t *>(m.data) + row * packedRowBytes(f, m.cols);
  const uint8_t *q = base + k0;
  for (int64_t j = 0; j < n;) {
    const int64_t g = (k0 + j) / m.group;
    uint16_t h;
    std::memcpy(&h, base + m.cols + 2 * g, 2);
    const float s = halfToFloat(h), c = -balancedCenter(8) * s;
    const int64_t end = (g + 1) * m.group - k0 < n ? (g + 1) * m.group - k0 : n;
    for (; j < end; ++j)
      out[j] = float(q[j]) * s + c;
  }
}

void downRange(const float *x, int64_t M, int64_t ldx, const LoraMatrix &a,
               int64_t i0, int64_t i1, float *t, int64_t ldt) {
  const int64_t K = a.cols;
  float w[kChunk];
  for (int64_t m0 = 0; m0 < M; m0 += kRowsM) {
    const int64_t mb = M - m0 < kRowsM ? M - m0 : kRowsM;
    for (int64_t i = i0; i < i1; ++i) {
      float acc[kRowsM][8] = {};
      float tail[kRowsM] = {};
      for (int64_t k = 0; k < K; k += kChunk) {
        const int64_t n = K - k < kChunk ? K - k : kChunk;
        decode(a, i, k, n, w);
        const int64_t full = n / 8 * 8;
        for (int64_t r = 0; r < mb; ++r) {
          const float *xr = x + (m0 + r) * ldx + k;
          for (int64_t j = 0; j < full; j += 8)
            for (int l = 0; l < 8; ++l)
              acc[r][l] += xr[j + l] * w[j + l];
          for (int64_t j = full; j < n; ++j)
            tail[r] += xr[j] * w[j];
        }
      }
      for (int64_t r = 0; r < mb; ++r) {
        float s = tail[r];
        for (int l = 0; l < 8; ++l)
          s += acc[r][l];
        t[(m0 + r) * ldt + i] = s;
      }
    }
  }
}

void upRange(const float *t, int64_t M, int64_t ldt, const LoraMatrix &bt,
             int64_t n0, int64_t n1, float scale, float *y, int64_t ldy) {
  float w[kChunk];
  for (int64_t n = n0; n < n1; n += kChunk) {
    const int64_t width = n1 - n < kChunk ? n1 - n : kChunk;
    for (int64_t i = 0; i < bt.rows; ++i) {
      decode(bt, i, n, width, w);
      for (int64_t m = 0; m < M; ++m) {
        const float c = scale * t[m * ldt + i];
        float *yr = y + m * ldy + n;
        for (int64_t j = 0; j < width; ++j)
          yr[j] += c * w[j];
      }
    }
  }
}

} // namespace

const LoraIsa kLoraGeneric = {&downRange, &upRange};

} // namespace fm::kernels::detail
