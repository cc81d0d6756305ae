// The Vulkan target (VulkanTarget.h) on the target interface: the runtime's
// Vulkan device provides the micro-kernels (hand-written GLSL); the groups
// go through SpirvKernels.
#include "targets/vulkan/VulkanTarget.h"

#include "targets/Target.h"
#include "targets/vulkan/SpirvKernels.h"

#include "llvm/ADT/StringSwitch.h"

#include <cstring>

namespace fm::vulkan {
namespace {

class VulkanTarget final : public target::Target {
public:
  llvm::StringRef name() const override { return "vulkan"; }
  llvm::StringRef description() const override {
    return "SPIR-V compute kernels for Vulkan 1.2 devices with 8/16-bit storage";
  }
  bool providesMicroKernel(llvm::StringRef op) const override {
    return llvm::StringSwitch<bool>(op)
        .Cases("fmk.embed", "fmk.matmul", "fmk.attention", "fmk.moe", true)
        .Cases("fmk.take_last", "fmk.all_reduce", true)
        // The image encoders' kernels (runtime/hal/vulkan/VulkanVision.cpp).
        .Cases("fmk.patch_embed", "fmk.layer_norm", "fmk.vit_attention", true)
        .Cases("fmk.conv3x3", "fmk.avg_pool", true)
        .Default(false);
  }
  void buildKernelPipeline(mlir::OpPassManager &pm) const override {
    spv::addSpirvLoweringPasses(pm);
  }
  llvm::Expected<target::SerializedExecutable>
  serializeExecutable(mlir::ModuleOp kernels, const target::TargetOptions &,
                      const std::function<void(llvm::StringRef)> &progress) const override {
    auto module = spv::compileToSpirv(kernels, spv::vulkanProfile(), progress);
    if (!module)
      return module.takeError();
    target::SerializedExecutable out;
    out.target = "vulkan";
    out.format = "spirv";
    out.triple = "spirv-unknown-vulkan1.1";
    out.data.resize(module->words.size() * 4);
    std::memcpy(out.data.data(), module->words.data(), out.data.size());
    out.entries = std::move(module->entries);
    out.summary = "SPIR-V for Vulkan 1.1+, " + std::to_string(out.entries.size()) +
                  " kernels, " + std::to_string(out.data.size()) + " bytes";
    return out;
  }
};

} // namespace

void registerVulkanTarget() {
  target::TargetRegistry::add(std::make_unique<VulkanTarget>());
}

} // namespace fm::vulkan
