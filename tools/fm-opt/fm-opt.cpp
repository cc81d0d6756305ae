// fm-opt: runs fm passes and pipelines on .mlir files, like mlir-opt.
#include "dialects/fm/IR/FmDialect.h"
#include "dialects/fmk/IR/FmkDialect.h"
#include "passes/Passes.h"
#include "targets/cpu/GroupCodegen.h"
#include "targets/vulkan/SpirvKernels.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::fm::FmDialect, mlir::fmk::FmkDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect>();
  mlir::fm::registerFmPassesAndPipelines();
  fm::cpu::registerCpuTargetPasses();
  fm::spv::registerGpuTargetPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "fm optimizer driver\n", registry));
}
