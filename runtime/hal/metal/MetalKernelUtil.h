// Internal to the Metal device's kernels: how each weight kind is bound
// (element size, kernel variant, function constants), the bindings of
// activation rows, and the dispatch grid of the team kernels: the same as
// hal/vulkan/VulkanKernelUtil.h, since the kernels are the same GLSL.
#pragma once

#include "hal/metal/MetalDevice.h"
#include "hal/gpu/GpuKernelAbi.h"
#include "kernels/qformat.h"

#include <algorithm>
#include <string>
#include <vector>

namespace fm::hal::mtl {

inline MetalBuffer &mbuf(Buffer *b) { return *static_cast<MetalBuffer *>(b); }

// The kernels' binding interface, shared with the other GPU device (hal/gpu/GpuKernelAbi.h).
using gpu::ceilDiv;
using gpu::foldTiles;
using gpu::kMr;
using gpu::kTeams;
using gpu::MatmulPush;
using gpu::rowsBytes;
using gpu::WeightBinding;

/// The binding of rows [first, first + rows) of `r`.
inline Expected<BoundRange> bindRows(const Rows &r, int64_t first, int64_t rows,
                                     const std::string &what) {
  return bindRange(mbuf(r.buffer), r.offset + uint64_t(first) * uint64_t(r.stride) * 4,
                   rowsBytes(r, rows), 4, what);
}

} // namespace fm::hal::mtl
