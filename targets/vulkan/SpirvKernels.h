// SPIR-V code generation for fmk.group, shared by the Vulkan and Metal
// targets: the GPU targets' gpu.funcs (targets/gpu/GpuKernels.h) with the
// SPIR-V ABI (storage buffers, rows/pos and the arguments' element offsets
// in push constants), lowered under a capability profile and serialized.
#pragma once

#include "targets/Target.h"
#include "targets/gpu/GpuKernels.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fm::spv {

using gpugen::kWorkgroupMemoryBytes;
using gpugen::kWorkgroupSize;

/// What the SPIR-V of a target may use.
struct SpirvProfile {
  std::string name;                  // "vulkan", "metal"
  std::vector<std::string> capabilities;
  std::vector<std::string> extensions;
};

/// Vulkan 1.1+ with 8/16-bit storage (the i8 KV cache): without these
/// capabilities MLIR lowers i8 buffers to emulated i32 words, which
/// validates and gives wrong values on a driver that binds the i8 buffer.
SpirvProfile vulkanProfile();
/// The same for SPIRV-Cross to MSL (Metal has 8/16-bit types natively).
SpirvProfile metalProfile();

/// The generated kernels: one SPIR-V module, and per distinct kernel (in
/// target::kernelNames order) its entry point and launch metadata.
struct SpirvModule {
  std::vector<uint32_t> words;
  std::vector<target::EntryPoint> entries;
};

/// The SPIR-V ABI of `profile` (the container module gets its target env;
/// push constants are one PushConstant memref of i32 words; workgroup
/// memory is memref.alloc in space Workgroup, CODEGEN.md §5; no subgroup
/// operation, so the subgroup width does not matter).
std::unique_ptr<gpugen::KernelAbi> spirvAbi(const SpirvProfile &profile);

/// gpugen::buildGpuKernels with spirvAbi(profile).
mlir::OwningOpRef<mlir::ModuleOp>
buildGpuKernels(mlir::ModuleOp module, const SpirvProfile &profile,
                std::vector<target::EntryPoint> *entries = nullptr);

/// The passes from the gpu.funcs of buildGpuKernels to a spirv.module
/// (CODEGEN.md §4-5): math to SPIR-V first, then GPU (with arith, scf,
/// memref), then the ABI lowering and the VCE triple.
void addSpirvLoweringPasses(mlir::OpPassManager &pm);

/// buildGpuKernels + addSpirvLoweringPasses + spirv::serialize. `progress`
/// (optional) gets one "<profile>: ..." line per stage.
llvm::Expected<SpirvModule>
compileToSpirv(mlir::ModuleOp module, const SpirvProfile &profile,
               const std::function<void(llvm::StringRef)> &progress = {});

/// Registers `fm-gpu-build-kernels` (the module becomes its gpu kernels, for
/// lit tests and debugging) and `fm-gpu-to-spirv` (buildGpuKernels and the
/// lowering: the spirv.module that is serialized).
void registerGpuTargetPasses();

} // namespace fm::spv
