// The SPIR-V kernel ABI (SpirvKernels.h) of the gpu.funcs of
// targets/gpu/GpuKernels.cpp: storage buffers at (set 0, binding i), the push
// words in one PushConstant memref, workgroup memory as memref.alloc in
// space Workgroup (gpu workgroup attributions do not convert, CODEGEN.md §5),
// spirv.ControlBarrier, and the capability profile as the target env.
#include "targets/vulkan/SpirvKernels.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"

using namespace mlir;

namespace fm::spv {
namespace {

spirv::StorageClassAttr storage(MLIRContext *ctx, spirv::StorageClass c) {
  return spirv::StorageClassAttr::get(ctx, c);
}

class SpirvAbi final : public gpugen::KernelAbi {
public:
  explicit SpirvAbi(SpirvProfile profile) : profile_(std::move(profile)) {}

  void loadDialects(MLIRContext *ctx) const override { ctx->loadDialect<spirv::SPIRVDialect>(); }
  LogicalResult prepareModule(ModuleOp module) const override {
    MLIRContext *ctx = module.getContext();
    std::string caps, exts;
    for (const std::string &c : profile_.capabilities)
      caps += (caps.empty() ? "" : ", ") + c;
    for (const std::string &e : profile_.extensions)
      exts += (exts.empty() ? "" : ", ") + e;
    Attribute env = parseAttribute("#spirv.target_env<#spirv.vce<v1.3, [" + caps + "], [" +
                                       exts + "]>, api=Vulkan, #spirv.resource_limits<>>",
                                   ctx);
    if (!env)
      return module.emitError() << "invalid SPIR-V profile '" << profile_.name << "'";
    module->setAttr(spirv::getTargetEnvAttrName(), env);
    return success();
  }
  MemRefType bufferType(Type element) const override {
    return MemRefType::get({ShapedType::kDynamic}, element, AffineMap(),
                           storage(element.getContext(), spirv::StorageClass::StorageBuffer));
  }
  bool offsetsInPushWords() const override { return true; }
  // Vulkan's guaranteed maxPushConstantsSize.
  int64_t maxPushBytes() const override { return 128; }
  SmallVector<Type> pushArgTypes(MLIRContext *ctx, int64_t words) const override {
    return {MemRefType::get({words}, IntegerType::get(ctx, 32), AffineMap(),
                            storage(ctx, spirv::StorageClass::PushConstant))};
  }
  Value pushWord(OpBuilder &b, Location loc, ValueRange pushArgs, int64_t i) const override {
    Value index = arith::ConstantIndexOp::create(b, loc, i);
    return memref::LoadOp::create(b, loc, pushArgs[0], ValueRange{index});
  }
  void decorate(gpu::GPUFuncOp fn, unsigned numArgs) const override {
    MLIRContext *ctx = fn.getContext();
    const int32_t size = int32_t(gpugen::kWorkgroupSize);
    fn->setAttr(spirv::getEntryPointABIAttrName(),
                spirv::getEntryPointABIAttr(ctx, {size, 1, 1}));
    for (unsigned i = 0; i < numArgs; ++i)
      fn.setArgAttr(i, spirv::getInterfaceVarABIAttrName(),
                    spirv::getInterfaceVarABIAttr(0, i, std::nullopt, ctx));
  }
  void barrier(OpBuilder &b, Location loc) const override {
    spirv::ControlBarrierOp::create(
        b, loc, spirv::Scope::Workgroup, spirv::Scope::Workgroup,
        spirv::MemorySemantics::AcquireRelease | spirv::MemorySemantics::WorkgroupMemory |
            spirv::MemorySemantics::UniformMemory);
  }
  Value workgroupBuffer(OpBuilder &b, Location loc, gpu::GPUFuncOp,
                        int64_t floats) const override {
    auto type = MemRefType::get({floats}, b.getF32Type(), AffineMap(),
                                storage(b.getContext(), spirv::StorageClass::Workgroup));
    return memref::AllocOp::create(b, loc, type);
  }
  int64_t subgroupWidth() const override { return 0; }

private:
  SpirvProfile profile_;
};

} // namespace

SpirvProfile vulkanProfile() {
  return {"vulkan",
          {"Shader", "Int8", "StorageBuffer8BitAccess", "StorageBuffer16BitAccess"},
          {"SPV_KHR_storage_buffer_storage_class", "SPV_KHR_8bit_storage",
           "SPV_KHR_16bit_storage"}};
}

SpirvProfile metalProfile() {
  // SPIRV-Cross reads the same module; MSL has 8/16-bit types natively.
  SpirvProfile p = vulkanProfile();
  p.name = "metal";
  return p;
}

std::unique_ptr<gpugen::KernelAbi> spirvAbi(const SpirvProfile &profile) {
  return std::make_unique<SpirvAbi>(profile);
}

OwningOpRef<ModuleOp> buildGpuKernels(ModuleOp module, const SpirvProfile &profile,
                                      std::vector<target::EntryPoint> *entries) {
  return gpugen::buildGpuKernels(module, *spirvAbi(profile), entries);
}

} // namespace fm::spv
