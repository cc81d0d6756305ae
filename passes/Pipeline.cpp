// The fm compile pipeline, shared by `fmc compile` and `fm-opt --fm-compile`.
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::fm {

void buildFmCompilePipeline(OpPassManager &pm, const CompileOptions &opts) {
  if (opts.quantBits || opts.embedBits != "none" || opts.kvBits != "none" ||
      opts.floatStorage != "f32" || opts.visionBits ||
      opts.visionFloatStorage != "f32") {
    QuantizeWeightsPassOptions q;
    q.bits = opts.quantBits; // 0: only the embedding and/or the cache
    q.group = opts.quantGroup;
    q.grid = opts.quantGrid;
    q.embedBits = opts.embedBits;
    q.kvBits = opts.kvBits;
    q.floatStorage = opts.floatStorage;
    q.visionBits = opts.visionBits;
    q.visionFloatStorage = opts.visionFloatStorage;
    pm.addPass(createQuantizeWeightsPass(q));
  }
  pm.addPass(createShareKvPass());
  pm.addPass(createLowerToKernelsPass());
  PartitionTracksPassOptions part;
  part.ranks = opts.ranks;
  pm.addPass(createPartitionTracksPass(part));
  pm.addPass(createFusePass());
  pm.addPass(createCSEPass());
  PlanMemoryPassOptions plan;
  plan.maxRows = opts.maxPrefillRows;
  pm.addPass(createPlanMemoryPass(plan));
}

namespace {
struct PipelineOptions : PassPipelineOptions<PipelineOptions> {
  Option<int64_t> maxRows{*this, "max-rows",
                          llvm::cl::desc("the most tokens one prefill call processes"),
                          llvm::cl::init(64)};
  Option<int64_t> ranks{*this, "ranks",
                        llvm::cl::desc("MPI ranks the tracks are partitioned over"),
                        llvm::cl::init(1)};
};
} // namespace

void registerFmPassesAndPipelines() {
  registerFmPasses();
  PassPipelineRegistration<PipelineOptions>(
      "fm-compile", "The fm pass pipeline of `fmc compile` (share-kv, lower, partition, fuse, plan)",
      [](OpPassManager &pm, const PipelineOptions &o) {
        CompileOptions opts;
        opts.maxPrefillRows = o.maxRows;
        opts.ranks = o.ranks;
        buildFmCompilePipeline(pm, opts);
      });
}

} // namespace mlir::fm
