// The CPU target (CpuTarget.h) on the target interface: the runtime's CPU
// device provides every micro-kernel; the groups go through GroupCodegen.
#include "targets/cpu/CpuTarget.h"

#include "targets/Target.h"
#include "targets/cpu/GroupCodegen.h"

#include "llvm/ADT/StringSwitch.h"

namespace fm::cpu {
namespace {

class CpuTarget final : public target::Target {
public:
  llvm::StringRef name() const override { return "cpu"; }
  llvm::StringRef description() const override {
    return "native code through LLVM (an ELF shared object for the "
           "runtime's own loader, or an object to link statically)";
  }
  std::vector<target::TargetOption> options() const override {
    return {{"cpu", "native (this machine), x86-64-v3, aarch64, aarch64-apple or aarch64-ios"},
            {"cpu-code", "image (an ELF image the runtime loads) or static (an object and a "
                         "registration source that the application links)"}};
  }
  bool providesMicroKernel(llvm::StringRef op) const override {
    return llvm::StringSwitch<bool>(op)
        .Cases("fmk.embed", "fmk.matmul", "fmk.attention", "fmk.moe", true)
        .Cases("fmk.take_last", "fmk.all_reduce", true)
        // The image encoders' kernels (runtime/hal/cpu/CpuVisionKernels.cpp).
        .Cases("fmk.patch_embed", "fmk.layer_norm", "fmk.vit_attention", true)
        .Cases("fmk.conv3x3", "fmk.avg_pool", true)
        .Default(false);
  }
  void buildKernelPipeline(mlir::OpPassManager &pm) const override {
    addLlvmLoweringPasses(pm);
  }
  llvm::Expected<target::SerializedExecutable>
  serializeExecutable(mlir::ModuleOp kernels, const target::TargetOptions &options,
                      const std::function<void(llvm::StringRef)> &progress)
      const override {
    CpuOptions o;
    if (auto it = options.find("cpu"); it != options.end())
      o.cpu = it->second;
    if (auto it = options.find("cpu-code"); it != options.end())
      o.code = it->second;
    auto exe = compileGroups(kernels, o, progress);
    if (!exe)
      return exe.takeError();
    target::SerializedExecutable out;
    out.target = "cpu";
    out.format = exe->format;
    out.triple = exe->triple;
    out.cpu = exe->cpu;
    out.data = std::move(exe->image);
    for (const std::string &f : exe->functions)
      out.entries.push_back({f, {}, {}, {}});
    out.summary = out.triple + ", cpu " + out.cpu + ", " + out.format;
    if (exe->format == "static") {
      out.summary += " (key " + exe->staticKey + ")";
      out.sideFiles.push_back({".kernels.o", std::move(exe->staticObject)});
      out.sideFiles.push_back(
          {".kernels.c", std::vector<uint8_t>(exe->staticRegistration.begin(),
                                              exe->staticRegistration.end())});
    }
    return out;
  }
};

} // namespace

void registerCpuTarget() {
  target::TargetRegistry::add(std::make_unique<CpuTarget>());
}

} // namespace fm::cpu
