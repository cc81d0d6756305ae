// A weight as the matmul kernels take it (f32, f16 or a packed low-bit
// format) and the one call that multiplies activations by any of them.
#pragma once

#include "kernels/matmul.h"
#include "kernels/qformat.h"
#include "kernels/qgemm.h"
#include "kernels/qmatmul.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace fm::rt {

class ThreadPool;

/// An nn.Linear weight (out × in) in the artifact's data section.
struct WeightRef {
  enum class Kind : uint8_t { F32, F16, Quant };
  const void *data = nullptr;
  Kind kind = Kind::F32;
  /// Kind::Quant: the packed format (kernels/qformat.h).
  kernels::QuantFormat format{8, 32, kernels::QuantGrid::Balanced};
  /// Kind::Quant: how the activations meet the packed weights (the
  /// session's SessionOptions::activations).
  kernels::QActivations activations = kernels::QActivations::Int8x2;
  /// Kind::Quant, optional: the same weight repacked into
  /// kernels::GemmLayout::Panel16 (hal/cpu/GemmWeights.h), which launches of
  /// more than one row multiply by as a GEMM.
  const uint8_t *gemm = nullptr;

  /// Bytes of one row of K inputs.
  size_t rowBytes(int64_t K) const {
    switch (kind) {
    case Kind::F32:
      return static_cast<size_t>(K) * sizeof(float);
    case Kind::F16:
      return static_cast<size_t>(K) * sizeof(uint16_t);
    case Kind::Quant:
      return kernels::packedRowBytes(format, K);
    }
    return 0;
  }

  /// Whether rows of `other` can continue this weight's rows (one kernel
  /// call over both when they are adjacent in memory).
  bool sameLayout(const WeightRef &other) const {
    return kind == other.kind &&
           (kind != Kind::Quant || (format.bits == other.format.bits &&
                                    format.group == other.format.group &&
                                    format.grid == other.format.grid));
  }
};

/// Bytes of `scratch` linear() needs for up to M rows of K inputs by w,
/// whether or not w has a GEMM copy yet (0 for f32 and f16 weights).
inline size_t linearScratchBytes(const WeightRef &w, int64_t M, int64_t K) {
  if (w.kind != WeightRef::Kind::Quant)
    return 0;
  size_t bytes = kernels::qmatmulScratchBytes(w.format, M, K, w.activations);
  if (M > kernels::kMatvecMaxRows &&
      w.activations != kernels::QActivations::F32)
    bytes = std::max(bytes, kernels::qgemmScratchBytes(w.format, M, K,
                                                       w.activations));
  return bytes;
}

/// y[M][N] (+)= x[M][K] · wᵀ (dense rows) on the kernel for w's kind.
/// `scratch`, for a packed weight: the larger of kernels::qmatmulScratchBytes
/// and (with a GEMM copy) kernels::qgemmScratchBytes for M rows; null: the
/// kernels' thread-local buffers, which grow on first use.
inline void linear(const WeightRef &w, const float *x, int64_t M, int64_t K,
                   int64_t N, float *y, bool accumulate, ThreadPool *pool,
                   uint8_t *scratch = nullptr) {
  switch (w.kind) {
  case WeightRef::Kind::F32:
    kernels::matmulF32(x, M, K, static_cast<const float *>(w.data), N, y,
                       accumulate, pool);
    return;
  case WeightRef::Kind::F16:
    kernels::matmulF16W(x, M, K, static_cast<const uint16_t *>(w.data), N, y,
                        accumulate, pool);
    return;
  case WeightRef::Kind::Quant:
    // qgemm's F32 mode decodes the weights (slow): exact activations keep
    // the row kernel. Up to kMatvecMaxRows rows take qmatmul's matvec,
    // which reads the weights once for all of them and gives each row the
    // decode step's result bit for bit (speculative verification, batched
    // decode); qgemm rounds them differently and costs a 16-row tile.
    if (M > kernels::kMatvecMaxRows && w.gemm &&
        w.activations != kernels::QActivations::F32) {
      kernels::qgemm(x, M, K, w.gemm, kernels::GemmLayout::Panel16, w.format,
                     N, y, accumulate, pool, w.activations, scratch);
      return;
    }
    kernels::qmatmul(x, M, K, static_cast<const uint8_t *>(w.data), w.format, N,
                     y, accumulate, pool, w.activations, scratch);
    return;
  }
}

} // namespace fm::rt
