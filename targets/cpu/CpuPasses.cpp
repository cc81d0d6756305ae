// fm-cpu-build-kernels: prints the CPU kernels of a module's groups (lit, debugging).
#include "targets/cpu/GroupCodegen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include <mutex>

namespace fm::cpu {
namespace {

/// Replaces the module's contents with the kernels of its groups.
struct BuildKernelsPass
    : mlir::PassWrapper<BuildKernelsPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BuildKernelsPass)

  llvm::StringRef getArgument() const override { return "fm-cpu-build-kernels"; }
  llvm::StringRef getDescription() const override {
    return "Replace the module with the CPU row kernels (scf/arith/math/memref) of its "
           "fmk.group ops";
  }
  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::func::FuncDialect, mlir::scf::SCFDialect,
                    mlir::arith::ArithDialect, mlir::math::MathDialect,
                    mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    mlir::OwningOpRef<mlir::ModuleOp> kernels = buildGroupKernels(module);
    if (!kernels)
      return signalPassFailure();
    mlir::Block *body = module.getBody();
    for (mlir::Operation &op : *body)
      op.dropAllReferences();
    while (!body->empty())
      body->front().erase();
    body->getOperations().splice(body->end(), kernels->getBody()->getOperations());
  }
};

} // namespace

void registerCpuTargetPasses() {
  static std::once_flag once;
  std::call_once(once, [] { mlir::PassRegistration<BuildKernelsPass>(); });
}

} // namespace fm::cpu
