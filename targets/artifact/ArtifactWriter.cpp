// The artifact writer (ArtifactWriter.h).
#include "targets/artifact/ArtifactWriter.h"

#include "targets/artifact/AtomicFile.h"
#include "targets/artifact/ProgramSerializer.h"

#include "fm/format.h"

#include <cstring>

namespace fm::writer {

llvm::Expected<ArtifactSummary>
writeArtifact(mlir::ModuleOp module,
              const std::vector<target::SerializedExecutable> &executables,
              const import::WeightSource &weights, const std::string &path,
              const std::function<void(llvm::StringRef)> &progress,
              const TokenizerFiles *tokenizer,
              const TrailerMaker &trailer,
              const WeightPlanOptions &planOptions) {
  const WeightPlan plan = planWeights(module, planOptions);
  auto program = serializeProgram(module, plan, executables, tokenizer);
  if (!program)
    return program.takeError();
  auto file = AtomicFile::create(path);
  if (!file)
    return file.takeError();
  std::vector<uint8_t> &head = program->head;
  if (llvm::Error e = file->write(head.data(), head.size()))
    return std::move(e);

  auto streamed = streamWeights(
      plan, weights,
      [&](const void *data, size_t size) { return file->write(data, size); },
      progress, [&](uint64_t offset, void *data, size_t size) {
        return file->readAt(head.size() + offset, data, size);
      });
  if (!streamed)
    return streamed.takeError();

  // The weights and source digests go into the FlatBuffer, which the
  // program digest then covers (its own 32 bytes taken as zeros).
  std::memcpy(head.data() + program->weightsDigestOffset,
              streamed->digest.data(), format::kDigestBytes);
  std::memcpy(head.data() + program->sourceDigestOffset,
              streamed->sourceDigest.data(), format::kDigestBytes);
  const format::Digest programDigest = format::programDigest(
      head.data(), head.size(), program->programDigestOffset);
  std::memcpy(head.data() + program->programDigestOffset, programDigest.data(),
              format::kDigestBytes);
  if (llvm::Error e = file->writeAt(0, head.data(), head.size()))
    return std::move(e);
  if (trailer) {
    auto bytes = trailer(programDigest, streamed->digest);
    if (!bytes)
      return bytes.takeError();
    if (llvm::Error e = file->write(bytes->data(), bytes->size()))
      return std::move(e);
  }
  const uint64_t bytes = file->size();
  if (llvm::Error e = file->commit())
    return std::move(e);

  ArtifactSummary s;
  s.artifactBytes = bytes;
  s.weightBytes = plan.dataSize - plan.gemmBytes;
  s.gemmCopyBytes = plan.gemmBytes;
  s.gemmCopies = plan.gemmCopies;
  s.parameters = plan.parameters;
  s.numWeights = unsigned(plan.weights.size());
  s.numKernels = unsigned(target::kernelNames(module).size());
  s.kvBytesPerToken = program->kvBytesPerToken;
  s.arenaBytes = program->arenaBytes;
  s.numLayers = program->numLayers;
  s.commandsPerPhase = program->commandsPerPhase;
  s.collectivesPerPhase = program->collectivesPerPhase;
  s.ranks = program->ranks;
  s.numTracks = program->numTracks;
  s.numTrackBlocks = program->numTrackBlocks;
  s.quantErrors = std::move(streamed->quantErrors);
  for (const QuantErrorEntry &e : s.quantErrors) {
    s.quantizedElements += e.elements;
    s.quantizedBytes += e.bytes;
    s.quantSqError += e.sqError;
    s.quantSqSum += e.sqSum;
  }
  s.programDigest = programDigest;
  s.weightsDigest = streamed->digest;
  s.sourceDigest = streamed->sourceDigest;
  return s;
}

} // namespace fm::writer
