// The CUDA target: generated kernels as one PTX module (NvvmKernels.h) that
// the runtime's CUDA device loads with cuModuleLoadData.
#pragma once

namespace fm::cuda {

/// Adds the "cuda" target to fm::target::TargetRegistry.
void registerCudaTarget();

} // namespace fm::cuda
