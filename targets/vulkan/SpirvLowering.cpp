// From the gpu.funcs of GpuKernels.cpp to a serialized SPIR-V module
// (CODEGEN.md §4-5: convert-math-to-spirv first, then convert-gpu-to-spirv,
// spirv-lower-abi-attrs, spirv-update-vce; spirv::serialize of the
// spirv.module that the conversion emits beside the gpu.module).
#include "targets/vulkan/SpirvKernels.h"
#include "targets/LoweringDiagnostics.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "mlir/Transforms/Passes.h"

#include <chrono>
#include <mutex>

using namespace mlir;

namespace fm::spv {
namespace {

/// The push-constant block has no descriptor set or binding (Vulkan
/// forbids them there); the ABI lowering gives every argument both.
void dropPushConstantBindings(spirv::ModuleOp module) {
  module.walk([](spirv::GlobalVariableOp var) {
    auto ptr = dyn_cast<spirv::PointerType>(var.getType());
    if (ptr && ptr.getStorageClass() == spirv::StorageClass::PushConstant) {
      var.removeBindingAttr();
      var.removeDescriptorSetAttr();
    }
  });
}

/// Replaces the module's contents with buildGpuKernels(module).
struct BuildGpuKernelsPass
    : PassWrapper<BuildGpuKernelsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BuildGpuKernelsPass)
  BuildGpuKernelsPass() = default;
  BuildGpuKernelsPass(const BuildGpuKernelsPass &) {}

  StringRef getArgument() const override { return "fm-gpu-build-kernels"; }
  StringRef getDescription() const override {
    return "Replace the module with the GPU kernels (gpu.func) of its fmk.group ops";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<gpu::GPUDialect, spirv::SPIRVDialect>();
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OwningOpRef<ModuleOp> kernels = buildGpuKernels(module, vulkanProfile());
    if (!kernels)
      return signalPassFailure();
    Block *body = module.getBody();
    for (Operation &op : *body)
      op.dropAllReferences();
    while (!body->empty())
      body->front().erase();
    body->getOperations().splice(body->end(), kernels->getBody()->getOperations());
    for (NamedAttribute a : (*kernels)->getAttrs())
      module->setAttr(a.getName(), a.getValue());
  }
};

/// fm-gpu-build-kernels, then the lowering: leaves the spirv.module.
struct GpuToSpirvPass : PassWrapper<GpuToSpirvPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuToSpirvPass)
  StringRef getArgument() const override { return "fm-gpu-to-spirv"; }
  StringRef getDescription() const override {
    return "Replace the module with the spirv.module of its fmk.group kernels";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<gpu::GPUDialect, spirv::SPIRVDialect>();
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OwningOpRef<ModuleOp> kernels = buildGpuKernels(module, vulkanProfile());
    if (!kernels)
      return signalPassFailure();
    PassManager pm(module.getContext());
    addSpirvLoweringPasses(pm);
    if (failed(pm.run(*kernels)))
      return signalPassFailure();
    Block *body = module.getBody();
    for (Operation &op : *body)
      op.dropAllReferences();
    while (!body->empty())
      body->front().erase();
    for (auto spv : llvm::make_early_inc_range(kernels->getOps<spirv::ModuleOp>())) {
      dropPushConstantBindings(spv);
      spv->moveBefore(body, body->end());
    }
  }
};

} // namespace

void addSpirvLoweringPasses(OpPassManager &pm) {
  pm.addPass(createConvertMathToSPIRVPass());
  pm.addPass(createConvertGPUToSPIRVPass());
  OpPassManager &spv = pm.nest<spirv::ModuleOp>();
  spv.addPass(spirv::createSPIRVLowerABIAttributesPass());
  spv.addPass(spirv::createSPIRVUpdateVCEPass());
  spv.addPass(createCanonicalizerPass());
}

llvm::Expected<SpirvModule>
compileToSpirv(ModuleOp module, const SpirvProfile &profile,
               const std::function<void(llvm::StringRef)> &progress) {
  using Clock = std::chrono::steady_clock;
  auto last = Clock::now();
  auto report = [&](const llvm::Twine &what) {
    if (!progress)
      return;
    auto now = Clock::now();
    progress((profile.name + ": " + what + " (" +
              llvm::Twine(std::chrono::duration_cast<std::chrono::milliseconds>(now - last)
                              .count()) +
              " ms)")
                 .str());
    last = now;
  };
  MLIRContext *ctx = module.getContext();
  fm::target::LoweringDiagnostics diagnostics(ctx);
  auto fail = [&](llvm::StringRef stage) { return diagnostics.fail(profile.name, stage); };

  SpirvModule out;
  OwningOpRef<ModuleOp> kernels = buildGpuKernels(module, profile, &out.entries);
  if (!kernels)
    return fail("building the GPU kernels");
  report("built " + llvm::Twine(out.entries.size()) + " GPU kernels");
  PassManager pm(ctx);
  addSpirvLoweringPasses(pm);
  if (failed(pm.run(*kernels)))
    return fail("lowering to SPIR-V");
  auto modules = kernels->getOps<spirv::ModuleOp>();
  if (std::distance(modules.begin(), modules.end()) != 1)
    return fail("expected one spirv.module after the lowering");
  spirv::ModuleOp spv = *modules.begin();
  dropPushConstantBindings(spv);
  SmallVector<uint32_t> words;
  if (failed(spirv::serialize(spv, words)))
    return fail("serializing SPIR-V");
  out.words.assign(words.begin(), words.end());
  report("serialized " + llvm::Twine(out.words.size() * 4) + " bytes of SPIR-V");
  return out;
}

void registerGpuTargetPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    PassRegistration<BuildGpuKernelsPass>();
    PassRegistration<GpuToSpirvPass>();
  });
}

} // namespace fm::spv
