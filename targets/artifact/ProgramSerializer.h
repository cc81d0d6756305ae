// The FlatBuffer of an artifact (runtime/schema/fmb.fbs): the weights table
// of a WeightPlan, the caches, one program per phase (the commands of the
// planned kernel-level IR), and one executable per target. The digests are
// left zero for the writer to fill.
#pragma once

#include "targets/Target.h"
#include "targets/artifact/TokenizerFiles.h"
#include "targets/artifact/WeightStreamer.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fm::writer {

struct SerializedProgram {
  /// The file's bytes before the data section: the size prefix, the
  /// FlatBuffer, zero padding to a multiple of 64.
  std::vector<uint8_t> head;
  /// Offsets in `head` of the digest fields.
  size_t programDigestOffset = 0, weightsDigestOffset = 0;
  size_t sourceDigestOffset = 0;
  // For the report.
  std::map<std::string, unsigned> commandsPerPhase;
  std::map<std::string, unsigned> collectivesPerPhase;
  uint64_t kvBytesPerToken = 0, arenaBytes = 0;
  unsigned numLayers = 0, ranks = 1, numTracks = 0, numTrackBlocks = 0;
};

/// `module` after fm-plan-memory; `executables` in target order, each with
/// one entry per distinct kernel of `module` (target::kernelNames), the
/// same names for every target. `tokenizer` (may be null) is embedded.
llvm::Expected<SerializedProgram>
serializeProgram(mlir::ModuleOp module, const WeightPlan &plan,
                 const std::vector<target::SerializedExecutable> &executables,
                 const TokenizerFiles *tokenizer = nullptr);

} // namespace fm::writer
