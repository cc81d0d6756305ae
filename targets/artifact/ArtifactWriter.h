// The .fmb artifact writer: the planned kernel-level IR, one executable per
// target, and the checkpoint's weights → one file (runtime/schema/fmb.fbs).
// Three parts with one job each: the program serializer (the FlatBuffer),
// the weight streamer (the data section, from a WeightSource), and the
// atomic file; this file puts them together and fills the digests.
#pragma once

#include "import/weights/WeightSource.h"
#include "targets/Target.h"
#include "targets/artifact/TokenizerFiles.h"
#include "targets/artifact/WeightStreamer.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fm::writer {

struct ArtifactSummary {
  uint64_t artifactBytes = 0, weightBytes = 0, parameters = 0;
  /// The CPU's GEMM copies after the shared weights (WeightPlanOptions).
  uint64_t gemmCopyBytes = 0;
  unsigned gemmCopies = 0;
  uint64_t kvBytesPerToken = 0, arenaBytes = 0;
  unsigned numWeights = 0, numLayers = 0, numKernels = 0;
  std::map<std::string, unsigned> commandsPerPhase;
  /// All-reduce commands per phase (one per track block when partitioned).
  std::map<std::string, unsigned> collectivesPerPhase;
  unsigned ranks = 1, numTracks = 0, numTrackBlocks = 0;
  /// One entry per quantized tensor, in file order.
  std::vector<QuantErrorEntry> quantErrors;
  /// Totals over the quantized tensors.
  uint64_t quantizedElements = 0, quantizedBytes = 0;
  double quantSqError = 0, quantSqSum = 0;
  format::Digest programDigest{}, weightsDigest{}, sourceDigest{};
};

/// Bytes to append after the data section, made from the finished
/// artifact's digests (program, weights): the trailer records of
/// fm/artifact_signature.h, e.g. a signature.
using TrailerMaker = std::function<llvm::Expected<std::vector<uint8_t>>(
    const format::Digest &program, const format::Digest &weights)>;

/// Writes `module` (after fm-plan-memory) with `executables` to `path`,
/// atomically (a temporary file renamed at the end). Weights are read from
/// `weights` and streamed to the file one tensor at a time, stored as their
/// fm.param attributes say (f32, f16, or packed). `tokenizer` (may be null)
/// is embedded as it is. `trailer` (optional) adds its bytes after the data
/// section before the file appears. `planOptions` chooses the CPU's GEMM
/// copies (WeightPlan).
llvm::Expected<ArtifactSummary>
writeArtifact(mlir::ModuleOp module,
              const std::vector<target::SerializedExecutable> &executables,
              const import::WeightSource &weights, const std::string &path,
              const std::function<void(llvm::StringRef)> &progress = {},
              const TokenizerFiles *tokenizer = nullptr,
              const TrailerMaker &trailer = {},
              const WeightPlanOptions &planOptions = {});

} // namespace fm::writer
