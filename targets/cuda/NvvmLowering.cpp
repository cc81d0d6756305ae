// NvvmKernels.h: the NVVM kernel ABI of the gpu.funcs of
// targets/gpu/GpuKernels.cpp and their lowering to PTX.
#include "targets/cuda/NvvmKernels.h"
#include "targets/LoweringDiagnostics.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#include <chrono>

using namespace mlir;

namespace fm::nvvm {
namespace {

/// NVIDIA's warp.
constexpr int64_t kWarp = 32;

class NvvmAbi final : public gpugen::KernelAbi {
public:
  void loadDialects(MLIRContext *ctx) const override {
    ctx->loadDialect<NVVM::NVVMDialect, LLVM::LLVMDialect>();
  }
  LogicalResult prepareModule(ModuleOp) const override { return success(); }
  MemRefType bufferType(Type element) const override {
    auto global = gpu::AddressSpaceAttr::get(element.getContext(), gpu::AddressSpace::Global);
    return MemRefType::get({ShapedType::kDynamic}, element, AffineMap(), global);
  }
  // The runtime passes each pointer at its argument's row 0.
  bool offsetsInPushWords() const override { return false; }
  // Kernel parameters: 4 KiB on every CUDA GPU.
  int64_t maxPushBytes() const override { return 4096; }
  SmallVector<Type> pushArgTypes(MLIRContext *ctx, int64_t words) const override {
    return SmallVector<Type>(words, IntegerType::get(ctx, 32));
  }
  Value pushWord(OpBuilder &, Location, ValueRange pushArgs, int64_t i) const override {
    return pushArgs[i];
  }
  void decorate(gpu::GPUFuncOp fn, unsigned) const override {
    // .reqntid: ptxas may size registers for exactly this block.
    const int32_t size = int32_t(gpugen::kWorkgroupSize);
    fn.setKnownBlockSizeAttr(DenseI32ArrayAttr::get(fn.getContext(), {size, 1, 1}));
  }
  void barrier(OpBuilder &b, Location loc) const override { gpu::BarrierOp::create(b, loc); }
  Value workgroupBuffer(OpBuilder &, Location loc, gpu::GPUFuncOp fn,
                        int64_t floats) const override {
    // CODEGEN.md §3: NVVM takes workgroup attributions (an alloc in the
    // workgroup space does not lower).
    auto space = gpu::AddressSpaceAttr::get(fn.getContext(), gpu::AddressSpace::Workgroup);
    auto type = MemRefType::get({floats}, Float32Type::get(fn.getContext()), AffineMap(), space);
    return fn.addWorkgroupAttribution(type, loc);
  }
  int64_t subgroupWidth() const override { return kWarp; }
};

/// gpu.subgroup_reduce → gpu.shuffle butterflies (convert-gpu-to-nvvm does
/// not lower f32 reductions; CODEGEN.md §3).
struct ExpandSubgroupReducePass
    : PassWrapper<ExpandSubgroupReducePass, OperationPass<gpu::GPUModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandSubgroupReducePass)
  StringRef getArgument() const override { return "fm-expand-subgroup-reduce"; }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGpuLowerSubgroupReduceToShufflePatterns(patterns, kWarp);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

/// The dialect interfaces the lowering looks up: convert-gpu-to-nvvm takes
/// the to-LLVM patterns of every loaded dialect from its
/// ConvertToLLVMPatternInterface; gpu-module-to-binary needs the NVVM target
/// attribute's serializer and the LLVM IR translations.
void registerLoweringInterfaces(MLIRContext *ctx) {
  DialectRegistry registry;
  registerAllExtensions(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  ctx->appendDialectRegistry(registry);
}

} // namespace

const std::vector<std::string> &supportedArchs() {
  static const std::vector<std::string> archs = {"sm_80", "sm_86", "sm_89", "sm_90"};
  return archs;
}

std::unique_ptr<gpugen::KernelAbi> nvvmAbi() { return std::make_unique<NvvmAbi>(); }

void addNvvmLoweringPasses(OpPassManager &pm, const PtxOptions &options) {
  GpuNVVMAttachTargetOptions attach;
  attach.chip = options.arch;
  // PTX ISA 8.0 (CUDA 12.0 drivers and newer) for every architecture: the
  // default PTX 6.0 does not know sm_90 (CODEGEN.md §3).
  attach.features = "+ptx80";
  attach.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(attach));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(std::make_unique<ExpandSubgroupReducePass>());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = options.toolkit;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

llvm::Expected<PtxModule> compileToPtx(ModuleOp module, const PtxOptions &options,
                                       const std::function<void(llvm::StringRef)> &progress) {
  using Clock = std::chrono::steady_clock;
  auto last = Clock::now();
  auto report = [&](const llvm::Twine &what) {
    if (!progress)
      return;
    auto now = Clock::now();
    progress(("cuda: " + what + " (" +
              llvm::Twine(std::chrono::duration_cast<std::chrono::milliseconds>(now - last)
                              .count()) +
              " ms)")
                 .str());
    last = now;
  };
  MLIRContext *ctx = module.getContext();
  registerLoweringInterfaces(ctx);
  fm::target::LoweringDiagnostics diagnostics(ctx);
  auto fail = [&](llvm::StringRef stage) { return diagnostics.fail("cuda " + options.arch, stage); };

  PtxModule out;
  OwningOpRef<ModuleOp> kernels = gpugen::buildGpuKernels(module, *nvvmAbi(), &out.entries);
  if (!kernels)
    return fail("building the GPU kernels");
  report("built " + llvm::Twine(out.entries.size()) + " GPU kernels");
  PassManager pm(ctx);
  addNvvmLoweringPasses(pm, options);
  if (failed(pm.run(*kernels)))
    return fail("lowering through NVVM to PTX");
  auto binaries = kernels->getOps<gpu::BinaryOp>();
  if (std::distance(binaries.begin(), binaries.end()) != 1)
    return fail("expected one gpu.binary after the lowering");
  gpu::BinaryOp binary = *binaries.begin();
  auto objects = binary.getObjectsAttr();
  if (objects.size() != 1)
    return fail("expected one object in the gpu.binary");
  auto object = dyn_cast<gpu::ObjectAttr>(objects[0]);
  if (!object || object.getFormat() != gpu::CompilationTarget::Assembly)
    return fail("expected PTX assembly in the gpu.binary");
  out.ptx = object.getObject().getValue().str();
  report("emitted " + llvm::Twine(out.ptx.size()) + " bytes of PTX for " + options.arch);
  return out;
}

} // namespace fm::nvvm
