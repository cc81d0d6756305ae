// The fm passes and the pipeline that `fmc compile` and `fm-opt` share.
#pragma once

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include <cstdint>
#include <string>
#include <memory>

namespace mlir::fm {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

struct CompileOptions {
  /// The most tokens one prefill call processes (the arena is sized for it).
  int64_t maxPrefillRows = 64;
  /// MPI ranks the tracks are partitioned over; 1: no collectives.
  int64_t ranks = 1;
  /// Weight quantization: 0 = none, else 2, 4 or 8 bits per weight.
  int64_t quantBits = 0;
  int64_t quantGroup = 64;
  std::string quantGrid = "balanced";
  std::string embedBits = "none"; // "4", "8" or "none"
  std::string kvBits = "none";    // "8" or "none"
  /// Unpacked micro-kernel weights: "f32" or "f16".
  std::string floatStorage = "f32";
  /// The image encoder's linear weights (encode_image: qkv, proj, fc1, fc2,
  /// the adapter's linear), which the options above leave alone: 0 = as
  /// imported (f32), else 4 or 8 bits; and "f32" or "f16" storage.
  int64_t visionBits = 0;
  std::string visionFloatStorage = "f32";
};

/// quantize-weights → share-kv → lower-to-kernels → partition-tracks → fuse
/// → cse → plan-memory.
void buildFmCompilePipeline(OpPassManager &pm, const CompileOptions &opts);

/// Registers every fm pass and the `fm-compile` pipeline with the global
/// registry (for fm-opt).
void registerFmPassesAndPipelines();

} // namespace mlir::fm
