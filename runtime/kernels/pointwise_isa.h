// Internal: the per-instruction-set LayerNorm and activation bodies that
// pointwise.cpp dispatches to and splits across threads.
#pragma once

#include "kernels/pointwise.h"

#include <cstdint>

namespace fm::kernels::detail {

struct PointwiseIsa {
  /// Rows [r0, r1) of layerNorm.
  void (*layerNormRows)(const float *x, int64_t r0, int64_t r1, int64_t C,
                        const float *weight, const float *bias, float eps,
                        float *y);
  /// Elements [i0, i1) of activate.
  void (*activate)(Activation act, float *x, int64_t i0, int64_t i1);
};

// Defined where CMake compiles pointwise_avx2.cpp / pointwise_avx512.cpp
// (FM_KERNELS_X86); callable only where the CPU supports them.
extern const PointwiseIsa kPointwiseGeneric;
extern const PointwiseIsa kPointwiseAvx2;
extern const PointwiseIsa kPointwiseAvx512;

} // namespace fm::kernels::detail
