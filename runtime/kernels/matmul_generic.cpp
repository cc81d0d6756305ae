// Portable matmul/matvec: plain C++ written so that compilers vectorize it
// (fixed-width partial sums instead of one serial float reduction).
#include "kernels/matmul.h"
#include "kernels/matmul_isa.h"

namespace fm::kernels::detail {
namespace {

// Partial sums per dot product: wide enough to fill a vector register and
// to hide FMA latency.
constexpr int kLanes = 8;
// w rows that share one pass over a row of x.
constexpr int kRows = 4;

inline float widen(float v) { return v; }
inline float widen(uint16_t v) { return halfToFloat(v); }

// out[r] = dot(x, w row r) for r < rows (rows <= kRows).
template <typename W>
void dotRows(const float *x, const W *w, int64_t K, int rows, float *out) {
  float acc[kRows][kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes)
    for (int r = 0; r < rows; ++r)
      for (int l = 0; l < kLanes; ++l)
        acc[r][l] += x[k + l] * widen(w[r * K + k + l]);
  for (int r = 0; r < rows; ++r) {
    float s = 0.0f;
    for (int64_t kk = k; kk < K; ++kk)
      s += x[kk] * widen(w[r * K + kk]);
    for (int l = 0; l < kLanes; ++l)
      s += acc[r][l];
    out[r] = s;
  }
}

template <typename W>
void matmulRangeGeneric(const float *x, int64_t K, const W *w, float *y,
                        int64_t ldy, int64_t m0, int64_t m1, int64_t n0,
                        int64_t n1, bool accumulate) {
  for (int64_t n = n0; n < n1; n += kRows) {
    int rows = static_cast<int>(n1 - n < kRows ? n1 - n : kRows);
    for (int64_t m = m0; m < m1; ++m) {
      float sums[kRows];
      dotRows(x + m * K, w + n * K, K, rows, sums);
      float *yRow = y + m * ldy + n;
      for (int r = 0; r < rows; ++r)
        yRow[r] = accumulate ? yRow[r] + sums[r] : sums[r];
    }
  }
}

} // namespace

const MatmulIsa kMatmulGeneric = {&matmulRangeGeneric<float>,
                                  &matmulRangeGeneric<uint16_t>};

} // namespace fm::kernels::detail
