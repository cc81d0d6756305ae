// How the Vulkan device splits a matmul into dispatches of
// shaders/matmul.comp (adjacent weights of one layout are one block; a
// block larger than one binding splits by weight rows, activations larger
// than one binding by rows), shared by the base kernel (VulkanKernels.cpp)
// and the fused LoRA kernel (VulkanLora.cpp), which cuts the same parts
// further by the adapters' columns.
#pragma once

#include "hal/vulkan/VulkanKernelUtil.h"

#include <vector>

namespace fm::hal::vk {

/// One dispatch of the matmul shader: weight rows [col, col + n) of one
/// block (they write y's columns col .. col + n - 1 of the matmul) for
/// activation rows [m0, m0 + rows), with the bindings and the push
/// constants (M is the launch's).
struct MatmulPart {
  explicit MatmulPart(const WeightDesc &first) : w(&first), b(first) {}
  const WeightDesc *w; // the block's first weight
  WeightBinding b;
  BoundRange x, wr, y;
  int64_t m0 = 0, rows = 0;
  int64_t col = 0, n = 0;
  MatmulPush push{};
  uint32_t gx = 1, gy = 1;
};

/// The parts of `d`, in the order the base kernel runs them.
Expected<std::vector<MatmulPart>> planMatmul(const VulkanContext &ctx, const MatmulDesc &d);

/// `p` narrowed to its columns [col, col + n) (a sub-range of its weight
/// rows; the bindings stay).
MatmulPart narrowPart(const MatmulPart &p, int64_t col, int64_t n);

} // namespace fm::hal::vk
