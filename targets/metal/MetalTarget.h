// The Metal target: the Vulkan target's SPIR-V kernels translated to MSL 2.3
// (macOS or iOS) by SPIRV-Cross, with the buffer indices and threadgroup
// sizes the Metal device binds recorded in the artifact.
#pragma once

namespace fm::metal {

/// Adds the "metal" target to fm::target::TargetRegistry.
void registerMetalTarget();

} // namespace fm::metal
