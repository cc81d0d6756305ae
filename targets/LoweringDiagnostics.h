// A target lowering's MLIR diagnostics, collected as the text of its compile error.
#pragma once

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace fm::target {

/// While alive, every diagnostic of the context (with its notes) is collected instead of
/// printed, so that a failed stage reports what MLIR said in the one error fmc prints.
class LoweringDiagnostics {
public:
  explicit LoweringDiagnostics(mlir::MLIRContext *ctx)
      : handler_(ctx, [this](mlir::Diagnostic &diag) {
          llvm::raw_string_ostream os(text_);
          if (!text_.empty())
            os << "\n";
          os << diag.getLocation() << ": " << diag;
          for (mlir::Diagnostic &note : diag.getNotes())
            os << "\n  note: " << note;
          return mlir::success();
        }) {}
  LoweringDiagnostics(const LoweringDiagnostics &) = delete;
  LoweringDiagnostics &operator=(const LoweringDiagnostics &) = delete;

  /// "cannot compile the groups for WHAT (STAGE)", then the diagnostics collected so far.
  llvm::Error fail(const std::string &what, llvm::StringRef stage) const {
    std::string message = "cannot compile the groups for " + what + " (" + stage.str() + ")";
    if (!text_.empty())
      message += ":\n" + text_;
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  }

private:
  std::string text_; // before handler_: the handler writes into it
  mlir::ScopedDiagnosticHandler handler_;
};

} // namespace fm::target
