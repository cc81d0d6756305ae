// Internal to the Vulkan device's kernels: how each weight kind is bound
// (element type, shader variant, specialization constants), the bindings of
// activation rows, and the dispatch grid of the team kernels.
#pragma once

#include "hal/vulkan/VulkanDevice.h"
#include "hal/gpu/GpuKernelAbi.h"
#include "kernels/qformat.h"

#include <algorithm>
#include <string>
#include <vector>

namespace fm::hal::vk {

inline VulkanBuffer &vbuf(Buffer *b) { return *static_cast<VulkanBuffer *>(b); }

// The kernels' binding interface, shared with the other GPU device (hal/gpu/GpuKernelAbi.h).
using gpu::ceilDiv;
using gpu::foldTiles;
using gpu::kMr;
using gpu::kTeams;
using gpu::MatmulPush;
using gpu::rowsBytes;
using gpu::WeightBinding;

/// The binding of rows [first, first + rows) of `r`.
inline Expected<BoundRange> bindRows(const VulkanContext &ctx, const Rows &r,
                                     int64_t first, int64_t rows,
                                     const std::string &what) {
  return bindRange(ctx, vbuf(r.buffer),
                   r.offset + uint64_t(first) * uint64_t(r.stride) * 4,
                   rowsBytes(r, rows), 4, what);
}

/// Rows of `r` that one binding covers at most (0 when not even one).
inline int64_t rowsPerBinding(const VulkanContext &ctx, const Rows &r) {
  const uint64_t room = ctx.maxRange() - ctx.offsetAlignment();
  const uint64_t row = uint64_t(r.width) * 4;
  if (row > room)
    return 0;
  if (r.stride <= 0)
    return INT64_MAX;
  return int64_t((room - row) / (uint64_t(r.stride) * 4)) + 1;
}

} // namespace fm::hal::vk
