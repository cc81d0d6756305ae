// The Vulkan target: generated kernels as one SPIR-V module (GLCompute entry
// points, storage buffers and push constants, SpirvKernels.h) that the
// runtime's Vulkan device loads.
#pragma once

namespace fm::vulkan {

/// Adds the "vulkan" target to fm::target::TargetRegistry.
void registerVulkanTarget();

} // namespace fm::vulkan
