// libFuzzer target: the fm and fmk dialects' custom parsers, attribute and
// type parsers and verifiers, on fm IR text (seeds: the lit cases of
// test/dialect). Any text must parse and verify, or be rejected with a
// diagnostic; what is accepted must print, and the printed text must parse
// and verify again (a printer/parser pair that disagree is a bug).
#include "dialects/fm/IR/FmDialect.h"
#include "dialects/fmk/IR/FmkDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

// One context for many inputs, renewed now and then so that uniqued
// attributes and types do not pile up.
mlir::MLIRContext &context(std::string **diagnostics) {
  static std::unique_ptr<mlir::MLIRContext> ctx;
  static std::string text;
  static int uses = 0;
  if (!ctx || ++uses > 512) {
    mlir::DialectRegistry registry;
    registry.insert<mlir::fm::FmDialect, mlir::fmk::FmkDialect,
                    mlir::func::FuncDialect, mlir::arith::ArithDialect,
                    mlir::tensor::TensorDialect>();
    ctx = std::make_unique<mlir::MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
    ctx->getDiagEngine().registerHandler([](mlir::Diagnostic &d) {
      if (text.size() < 4096)
        text += d.str() + "\n";
      return mlir::success();
    });
    uses = 0;
  }
  text.clear();
  *diagnostics = &text;
  return *ctx;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string *diagnostics = nullptr;
  mlir::MLIRContext &ctx = context(&diagnostics);
  // NUL-terminated, as a file that fmc reads is (MemoryBuffer::getFile):
  // MLIR's lexer reads one byte past a token at the end of the buffer.
  const std::string text(reinterpret_cast<const char *>(data), size);
  // Parsing verifies (ParserConfig's default).
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, mlir::ParserConfig(&ctx));
  if (!module)
    return 0;
  std::string printed;
  {
    llvm::raw_string_ostream os(printed);
    module->print(os);
  }
  mlir::OwningOpRef<mlir::ModuleOp> again =
      mlir::parseSourceString<mlir::ModuleOp>(printed, mlir::ParserConfig(&ctx));
  if (!again) {
    llvm::errs() << "accepted IR does not parse after printing:\n"
                 << printed << "\n"
                 << *diagnostics;
    std::abort();
  }
  return 0;
}
