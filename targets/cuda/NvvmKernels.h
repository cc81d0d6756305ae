// CUDA code generation for fmk.group: the GPU targets' gpu.funcs
// (targets/gpu/GpuKernels.h) with the NVVM ABI, lowered through NVVM to
// PTX (CODEGEN.md §3: nvvm-attach-target, convert-gpu-to-nvvm with the
// subgroup reductions expanded to shuffles, gpu-module-to-binary
// format=isa; math through the toolkit's libdevice).
//
// The kernel ABI the CUDA device follows (runtime/hal/cuda/CudaExecutable.h):
// each buffer argument i (Function.bindings[i]) is the five parameters of a
// 1-D memref descriptor (allocated pointer, aligned pointer, offset, size,
// stride: .u64 each), the pointer at the argument's row 0; then one .u32
// parameter per push constant ("rows", "pos"). Grid: rows x 1 x 1, block:
// Function.workgroup_size.
#pragma once

#include "targets/Target.h"
#include "targets/gpu/GpuKernels.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fm::nvvm {

/// The GPU architectures of --cuda-arch: sm_80 (A100) is the default, PTX
/// that the driver JITs for every newer GPU.
const std::vector<std::string> &supportedArchs();

/// The NVVM ABI: global-memory buffers, push words as i32 parameters,
/// workgroup attributions, gpu.barrier, reductions over 32-wide warps
/// (gpu.subgroup_reduce), a known block size.
std::unique_ptr<gpugen::KernelAbi> nvvmAbi();

struct PtxOptions {
  std::string arch = "sm_80";
  /// The CUDA toolkit (libdevice, ptxas).
  std::string toolkit;
};

/// The passes from buildGpuKernels' module to a gpu.binary holding PTX.
void addNvvmLoweringPasses(mlir::OpPassManager &pm, const PtxOptions &options);

/// The generated kernels: one PTX module, and per distinct kernel (in
/// target::kernelNames order) its entry point and launch metadata.
struct PtxModule {
  std::string ptx;
  std::vector<target::EntryPoint> entries;
};

/// buildGpuKernels + addNvvmLoweringPasses, the PTX of the gpu.binary.
/// `progress` (optional) gets one "cuda: ..." line per stage.
llvm::Expected<PtxModule>
compileToPtx(mlir::ModuleOp module, const PtxOptions &options,
             const std::function<void(llvm::StringRef)> &progress = {});

} // namespace fm::nvvm
