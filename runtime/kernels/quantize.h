// Packs f32 weights into the low-bit formats of qformat.h (the compiler's
// artifact writer) and unpacks them (the embedding gather, and the
// reference in tests). Plain C++, no MLIR.
#pragma once

#include "kernels/qformat.h"

#include <cmath>
#include <cstdint>

namespace fm::kernels {

/// What quantizing cost: sums over every weight of the squared error
/// (w - dequant(w))^2 and of w^2.
struct QuantError {
  double sqError = 0.0;
  double sqSum = 0.0;
  /// sqrt(sqError / sqSum); 0 for an all-zero input.
  double relativeRms() const {
    return sqSum > 0.0 ? std::sqrt(sqError / sqSum) : 0.0;
  }
};

/// Packs N rows of K inputs (w row-major, [N][K], an nn.Linear weight) into
/// `out`, N * packedRowBytes(f, K) bytes. K must be a multiple of f.group.
///
/// Per group the scale (and, affine, the minimum) minimizes the squared
/// error after rounding to f16: a search over clipping factors 0.5..1.0 of
/// the range in 32 steps, the scales that put max|w| exactly on each grid
/// level (bits <= 4), then least-squares refits of the best and its f16
/// neighbours. Weights that already lie on the balanced grid with an
/// f16-exact scale per group (quantization-aware training) come back
/// exactly (zero error) for 2 and 4 bits, and for 8 bits when a group
/// reaches the outer level. Costs ~45 error evaluations per weight, priced
/// 16 candidates per pass on AVX-512 (quantize_search.h: ~55 M weights/s
/// per core at 2 bits, 3x the one-at-a-time search it replaced, which
/// packed the same bytes); tensors over 2M weights are split by rows
/// across std::thread::hardware_concurrency() threads. The result depends
/// neither on the thread count nor on the instruction set.
QuantError quantizeRows(const float *w, int64_t N, int64_t K, QuantFormat f,
                        uint8_t *out);

/// The K values of one packed row (`row` points at its first byte).
void dequantizeRow(const uint8_t *row, QuantFormat f, int64_t K, float *out);

/// IEEE binary16 bits of v, rounded to nearest even (overflow gives inf).
uint16_t floatToHalf(float v);

} // namespace fm::kernels
