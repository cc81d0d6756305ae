// The CUDA target (CudaTarget.h) on the target interface: the runtime's CUDA
// device provides the micro-kernels (hand-written CUDA C++,
// runtime/hal/cuda/kernels); the groups go through NvvmKernels to PTX, which
// ptxas -v checks when the toolkit has it (errors fail, spills warn).
#include "targets/cuda/CudaTarget.h"

#include "targets/Target.h"
#include "targets/cuda/NvvmKernels.h"
#include "targets/cuda/Ptxas.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstdlib>

#ifndef FM_CUDA_TOOLKIT_DEFAULT
#define FM_CUDA_TOOLKIT_DEFAULT "/usr/local/cuda"
#endif

namespace fm::cuda {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// $CUDA_PATH, else the build's default.
std::string toolkitPath() {
  if (const char *env = std::getenv("CUDA_PATH"); env && *env)
    return env;
  return FM_CUDA_TOOLKIT_DEFAULT;
}

/// $FM_PTXAS, else the toolkit's bin/ptxas ("" when there is none).
std::string ptxasPath(const std::string &toolkit) {
  if (const char *env = std::getenv("FM_PTXAS"); env && *env)
    return env;
  llvm::SmallString<256> p(toolkit);
  llvm::sys::path::append(p, "bin", "ptxas");
  return llvm::sys::fs::can_execute(p) ? std::string(p) : std::string();
}

class CudaTarget final : public target::Target {
public:
  llvm::StringRef name() const override { return "cuda"; }
  llvm::StringRef description() const override {
    return "PTX through NVVM for NVIDIA GPUs (sm_80 and newer, CUDA 12 drivers)";
  }
  std::vector<target::TargetOption> options() const override {
    return {{"cuda-arch", "sm_80 (default: PTX the driver JITs for newer GPUs), sm_86, "
                          "sm_89 or sm_90"}};
  }
  bool providesMicroKernel(llvm::StringRef op) const override {
    // runtime/hal/cuda/CudaKernels.cpp and CudaMoe.cpp.
    return llvm::StringSwitch<bool>(op)
        .Cases("fmk.embed", "fmk.matmul", "fmk.attention", "fmk.moe", true)
        .Cases("fmk.take_last", "fmk.all_reduce", true)
        // The image encoders' kernels (runtime/hal/cuda/CudaVision.cpp).
        .Cases("fmk.patch_embed", "fmk.layer_norm", "fmk.vit_attention", true)
        .Cases("fmk.conv3x3", "fmk.avg_pool", true)
        .Default(false);
  }
  void buildKernelPipeline(mlir::OpPassManager &pm) const override {
    nvvm::addNvvmLoweringPasses(pm, {"sm_80", toolkitPath()});
  }
  llvm::Expected<target::SerializedExecutable>
  serializeExecutable(mlir::ModuleOp kernels, const target::TargetOptions &options,
                      const std::function<void(llvm::StringRef)> &progress) const override {
    nvvm::PtxOptions o;
    if (auto it = options.find("cuda-arch"); it != options.end() && !it->second.empty())
      o.arch = it->second;
    const auto &archs = nvvm::supportedArchs();
    if (std::find(archs.begin(), archs.end(), o.arch) == archs.end())
      return error("unknown CUDA architecture '" + o.arch + "' (expected one of " +
                   llvm::join(archs, ", ") + ")");
    o.toolkit = toolkitPath();
    llvm::SmallString<256> libdevice(o.toolkit);
    llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
    if (!llvm::sys::fs::exists(libdevice))
      return error("--target cuda needs the CUDA toolkit's libdevice (the kernels' math): " +
                   libdevice + " does not exist (set CUDA_PATH to the toolkit)");
    auto module = nvvm::compileToPtx(kernels, o, progress);
    if (!module)
      return module.takeError();

    target::SerializedExecutable out;
    out.target = "cuda";
    out.format = "ptx";
    out.triple = "nvptx64-nvidia-cuda";
    out.cpu = o.arch;
    out.data.assign(module->ptx.begin(), module->ptx.end());
    out.entries = std::move(module->entries);
    std::string checked = "not checked: no ptxas";
    if (std::string ptxas = ptxasPath(o.toolkit); !ptxas.empty()) {
      auto report = nvvm::runPtxas(ptxas, o.arch, module->ptx);
      if (!report)
        return error("cuda: ptxas refused the generated PTX: " +
                     llvm::toString(report.takeError()));
      int maxRegisters = 0;
      for (const nvvm::PtxasKernel &k : *report) {
        maxRegisters = std::max(maxRegisters, k.registers);
        if (k.spillStores || k.spillLoads)
          out.warnings.push_back("cuda: kernel " + k.name + " spills registers on " + o.arch +
                                 " (" + std::to_string(k.spillStores) + " bytes spill stores, " +
                                 std::to_string(k.spillLoads) + " bytes spill loads; ptxas -v)");
      }
      checked = "ptxas: " + std::to_string(report->size()) + " kernels, at most " +
                std::to_string(maxRegisters) + " registers";
      if (progress)
        progress("cuda: " + checked);
    } else if (progress) {
      progress("cuda: no ptxas in " + o.toolkit + "/bin (set FM_PTXAS): the PTX is not checked");
    }
    out.summary = "PTX for " + o.arch + ", " + std::to_string(out.entries.size()) +
                  " kernels, " + std::to_string(out.data.size()) + " bytes, " + checked;
    return out;
  }
};

} // namespace

void registerCudaTarget() { target::TargetRegistry::add(std::make_unique<CudaTarget>()); }

} // namespace fm::cuda
