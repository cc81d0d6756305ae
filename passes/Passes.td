// Declarations of the fm passes (fm-opt and fmc build pipelines from them).
#ifndef FM_PASSES_TD
#define FM_PASSES_TD

include "mlir/Pass/PassBase.td"

def ShareKvPass : Pass<"fm-share-kv", "mlir::ModuleOp"> {
  let summary = "Plans KV cache sharing: only owning layers get cache slots";
  let description = [{
    Compacts every `fm.kv_cache` to the slots that layers own (a layer that
    reuses a cache allocates none) and renumbers the slots. In the prefill
    phase, the layers from the first KV-reusing layer on only feed the
    logits, so they run on the positions whose logits are requested (the
    last one unless `all_logits` is set on the phase): the pass inserts an
    `fm.take_last` before them. That is the time-to-first-token gain of
    afm7's shared KV cache.
  }];
  let dependentDialects = ["::mlir::fm::FmDialect"];
}

#endif // FM_PASSES_TD
