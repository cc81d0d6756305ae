// ModelConfig: reads a model family's config.json into a ModelSpec and checks
// a checkpoint's tensors against the shapes that config implies.
#pragma once

#include "import/ModelSpec.h"
#include "import/weights/SafeTensors.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace fm::import {

/// "llama, afm7, pt_moe, mixtral, qwen2_moe": the model_type values fmc reads.
const char *supportedModelTypes();
std::optional<Family> familyFromModelType(llvm::StringRef modelType);

/// Reads `configPath` (a HF-style config.json) and fills every ModelSpec field:
/// dimensions, per-layer attention/FFN specs with their weight names, and the
/// full list of expected tensors. Messages start with `configPath`.
llvm::Expected<ModelSpec> readModelConfig(llvm::StringRef configPath);
/// The same, from JSON text already in memory; messages start with `nameForErrors`.
llvm::Expected<ModelSpec> parseModelConfig(llvm::StringRef jsonText,
                                           llvm::StringRef nameForErrors);

/// Compares `spec.expected` with the checkpoint. Every problem (missing tensor,
/// wrong shape) becomes one line of the returned Error, so a user sees all of
/// them at once; tensors the config does not use are appended to `warnings`.
llvm::Error checkWeights(const ModelSpec &spec, const WeightSet &weights,
                         std::vector<std::string> &warnings);

} // namespace fm::import
