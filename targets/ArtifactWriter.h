// The .fmb artifact writer: planned kernel-level IR + generated code +
// checkpoint weights → one FlatBuffers file (runtime/schema/fmb.fbs).
#pragma once

#include "targets/cpu/GroupCodegen.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fm::target {

/// The quantization error of one packed tensor.
struct QuantErrorEntry {
  std::string name;
  unsigned bits = 0;
  double relativeRms = 0, sqError = 0, sqSum = 0;
  uint64_t elements = 0, bytes = 0;
};

struct ArtifactSummary {
  uint64_t artifactBytes = 0, weightBytes = 0, parameters = 0;
  uint64_t kvBytesPerToken = 0, arenaBytes = 0;
  unsigned numWeights = 0, numLayers = 0, numKernels = 0;
  std::map<std::string, unsigned> commandsPerPhase;
  /// All-reduce commands per phase (one per track block when partitioned).
  std::map<std::string, unsigned> collectivesPerPhase;
  unsigned devices = 1, numTracks = 0, numTrackBlocks = 0;
  /// One entry per quantized tensor, in file order.
  std::vector<QuantErrorEntry> quantErrors;
  /// Totals over the quantized tensors.
  uint64_t quantizedElements = 0, quantizedBytes = 0;
  double quantSqError = 0, quantSqSum = 0;
};

struct WriteOptions {
  /// Store the matmul/embedding/expert weights that are not quantized as
  /// f16 (half the bytes of f32; the runtime converts in registers).
  bool f16Weights = false;
};

/// Writes `module` (after fm-plan-memory) with the executable `exe` to
/// `path`, atomically (a temporary file renamed at the end). Weights are
/// read from the checkpoint named by the fm.model's `weights` attribute and
/// streamed to the file, converted to f32, one tensor at a time.
llvm::Expected<ArtifactSummary>
writeArtifact(mlir::ModuleOp module, const cpu::CompiledExecutable &exe,
              const std::string &path,
              const std::function<void(llvm::StringRef)> &progress = {},
              const WriteOptions &options = {});

/// Kernel name → index in exe.functions; groups with one kernel name share
/// one function. Used by the writer and by `fmc compile` to build a module
/// with one group per kernel.
mlir::OwningOpRef<mlir::ModuleOp> uniqueKernels(mlir::ModuleOp module);

} // namespace fm::target
