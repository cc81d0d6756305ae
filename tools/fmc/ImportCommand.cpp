// `fmc import`: checkpoint directory → fm IR file and/or summary table.
#include "Commands.h"
#include "OptionChecks.h"
#include "import/Importer.h"

#include "dialects/fm/IR/FmDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

namespace fm::cli {

int runImport(const ImportArgs &args) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::fm::FmDialect, mlir::func::FuncDialect>();
  import::ImportOptions opts;
  auto context =
      importContext(args.modelDir, args.contextLength, args.contextGiven);
  if (!context) {
    llvm::WithColor::error(llvm::errs(), "fmc")
        << llvm::toString(context.takeError()) << "\n";
    return 1;
  }
  opts.contextLength = *context;
  std::vector<std::string> warnings;
  import::ModelSpec spec;
  import::WeightSet weights;
  auto module =
      import::importModel(ctx, args.modelDir, opts, warnings, &spec, &weights);
  for (const std::string &w : warnings)
    llvm::WithColor::warning(llvm::errs(), "fmc") << w << "\n";
  if (!module) {
    llvm::WithColor::error(llvm::errs(), "fmc")
        << llvm::toString(module.takeError()) << "\n";
    return 1;
  }
  if (args.printSummary)
    import::printSummary(llvm::outs(), spec, weights, opts);
  if (args.printSummary && args.output.empty())
    return 0;

  std::string outPath = args.output.empty() ? "-" : args.output;
  std::error_code ec;
  auto out = std::make_unique<llvm::ToolOutputFile>(outPath, ec,
                                                    llvm::sys::fs::OF_Text);
  if (ec) {
    llvm::WithColor::error(llvm::errs(), "fmc")
        << "cannot write " << outPath << ": " << ec.message() << "\n";
    return 1;
  }
  (*module)->print(out->os(), mlir::OpPrintingFlags().enableDebugInfo(
                                  /*enable=*/true, /*prettyForm=*/false));
  out->os() << "\n";
  out->keep();
  return 0;
}

} // namespace fm::cli
