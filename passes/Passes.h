// The fm passes and the pipeline that `fmc compile` and `fm-opt` share.
#pragma once

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include <cstdint>
#include <memory>

namespace mlir::fm {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

struct CompileOptions {
  /// The most tokens one prefill call processes (the arena is sized for it).
  int64_t maxPrefillRows = 64;
  /// Devices (MPI ranks) the tracks are partitioned over; 1: no collectives.
  int64_t devices = 1;
};

/// partition-tracks → share-kv → lower-to-kernels → fuse → cse → plan-memory.
void buildFmCompilePipeline(OpPassManager &pm, const CompileOptions &opts);

/// Registers every fm pass and the `fm-compile` pipeline with the global
/// registry (for fm-opt).
void registerFmPassesAndPipelines();

} // namespace mlir::fm
