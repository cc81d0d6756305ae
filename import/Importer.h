// Importer: a checked ModelSpec + its WeightSet → fm IR (parameters by key).
#pragma once

#include "import/ModelSpec.h"
#include "import/weights/SafeTensors.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace fm::import {

struct ImportOptions {
  /// Positions each KV cache holds (the longest context the model will run).
  int64_t contextLength = 2048;
  /// Symbol of the fm.model.
  std::string modelName = "model";
};

/// Reads `modelDir` (config.json + safetensors), checks every tensor the
/// config implies and returns the fm IR. `warnings` gets the unused tensors.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importModel(mlir::MLIRContext &ctx, llvm::StringRef modelDir,
            const ImportOptions &opts, std::vector<std::string> &warnings,
            ModelSpec *specOut = nullptr, WeightSet *weightsOut = nullptr);

/// Builds the fm IR of an already checked spec (no file access except for
/// the file names of `weights`).
mlir::OwningOpRef<mlir::ModuleOp> emitModel(mlir::MLIRContext &ctx,
                                            const ModelSpec &spec,
                                            const WeightSet &weights,
                                            llvm::StringRef modelDir,
                                            const ImportOptions &opts);

/// The `fmc import --print-summary` table: layers, kinds, tracks, experts,
/// caches, parameter count and bytes.
void printSummary(llvm::raw_ostream &os, const ModelSpec &spec,
                  const WeightSet &weights, const ImportOptions &opts);

} // namespace fm::import
