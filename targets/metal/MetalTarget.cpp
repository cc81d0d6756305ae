// The Metal target (MetalTarget.h) on the target interface.
//
// Executable.data of format "msl" is one MSL translation unit per function,
// in function order, each ending with a NUL byte (SPIRV-Cross translates one
// entry point at a time, each unit with its own type definitions). Function
// i's kernel is named after it; argument j is [[buffer(j)]] and the push
// constants (rows, pos, offset.j: the same words as on Vulkan, offsets 0 on
// Metal, which binds at any offset) [[buffer(bindings)]]; its threadgroup
// size is Function.workgroup_size. Why SPIR-V and not a direct MSL emitter:
// the SPIR-V is executed and validated on lavapipe here, so only the
// translation is unchecked, and SPIRV-Cross is what MoltenVK and IREE ship.
#include "targets/metal/MetalTarget.h"

#include "targets/Target.h"
#include "targets/metal/SpirvToMsl.h"
#include "targets/vulkan/SpirvKernels.h"

#include "llvm/ADT/StringSwitch.h"

#include <algorithm>

namespace fm::metal {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

class MetalTarget final : public target::Target {
public:
  llvm::StringRef name() const override { return "metal"; }
  llvm::StringRef description() const override {
    return "MSL 2.3 compute kernels (the Vulkan target's SPIR-V through SPIRV-Cross)";
  }
  std::vector<target::TargetOption> options() const override {
    return {{"metal", "macos (macOS 11+) or ios (iOS 14+)"}};
  }
  bool providesMicroKernel(llvm::StringRef op) const override {
    return llvm::StringSwitch<bool>(op)
        .Cases("fmk.embed", "fmk.matmul", "fmk.attention", "fmk.moe", true)
        .Cases("fmk.take_last", "fmk.all_reduce", true)
        // The image encoders' kernels (the Vulkan device's, runtime/hal/vulkan/VulkanVision.cpp, through SPIRV-Cross).
        .Cases("fmk.patch_embed", "fmk.layer_norm", "fmk.vit_attention", true)
        .Cases("fmk.conv3x3", "fmk.avg_pool", true)
        .Default(false);
  }
  void buildKernelPipeline(mlir::OpPassManager &pm) const override {
    spv::addSpirvLoweringPasses(pm);
  }
  llvm::Expected<target::SerializedExecutable>
  serializeExecutable(mlir::ModuleOp kernels, const target::TargetOptions &options,
                      const std::function<void(llvm::StringRef)> &progress) const override {
    msl::Platform platform = msl::Platform::MacOS;
    if (auto it = options.find("metal"); it != options.end()) {
      if (it->second == "ios")
        platform = msl::Platform::IOS;
      else if (it->second != "macos" && !it->second.empty())
        return error("unknown Metal platform '" + it->second + "' (expected macos or ios)");
    }
    auto module = spv::compileToSpirv(kernels, spv::metalProfile(), progress);
    if (!module)
      return module.takeError();
    target::SerializedExecutable out;
    out.target = "metal";
    out.format = "msl";
    out.triple = platform == msl::Platform::IOS ? "air64-apple-ios14.0" : "air64-apple-macosx11.0";
    uint64_t maxShared = 0; // the most threadgroup memory of one kernel
    for (target::EntryPoint &e : module->entries) {
      msl::Function fn;
      std::string why;
      if (!msl::translate(module->words.data(), module->words.size(), e.name,
                          uint32_t(e.bindings.size()), platform, &fn, &why))
        return error("metal: kernel " + e.name + ": " + why);
      if (fn.entry != e.name)
        return error("metal: kernel " + e.name + " is named '" + fn.entry + "' in MSL");
      e.workgroupSize = {fn.workgroup[0], fn.workgroup[1], fn.workgroup[2]};
      maxShared = std::max(maxShared, fn.threadgroupBytes);
      out.data.insert(out.data.end(), fn.source.begin(), fn.source.end());
      out.data.push_back(0);
    }
    out.entries = std::move(module->entries);
    if (progress)
      progress(("metal: translated " + std::to_string(out.entries.size()) +
                " kernels to MSL 2.3 for " + msl::platformName(platform))
                   .c_str());
    out.summary = std::string("MSL 2.3 for ") + msl::platformName(platform) + ", " +
                  std::to_string(out.entries.size()) + " kernels, " +
                  std::to_string(out.data.size()) + " bytes, threadgroup memory up to " +
                  std::to_string(maxShared) + " bytes";
    return out;
  }
};

} // namespace

void registerMetalTarget() { target::TargetRegistry::add(std::make_unique<MetalTarget>()); }

} // namespace fm::metal
