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
  let dependentDialects = ["::mlir::fm::FmDialect", "::mlir::func::FuncDialect"];
}

def LowerToKernelsPass : Pass<"fm-lower-to-kernels", "mlir::ModuleOp"> {
  let summary = "Lowers fm layers to the kernel level (fmk)";
  let description = [{
    Rewrites every phase function into fmk ops: projections become
    `fmk.matmul` (runtime micro-kernels), attention becomes RoPE, q/k norms,
    KV fake-quant and cache writes (row ops) around an `fmk.attention`
    micro-kernel, SwiGLU MLPs become two matmuls, `fmk.silu_mul` and a
    matmul, MoE layers an `fmk.moe`, and a track block an `fmk.tracks` (its
    tracks' kernels, one region each) followed by the `fmk.all_reduce` that
    combines them (placed by `fm-partition-tracks`). The image encoder
    (docs/vit.md) becomes micro-kernels: `fmk.patch_embed` (with the
    register tokens folded in), `fmk.layer_norm`, matmuls with their bias
    and GELU epilogues around `fmk.vit_attention`, and for the adapter a
    matmul, `fmk.conv3x3` and `fmk.avg_pool`; dropping the registers is a
    view (`fmk.drop_rows`). Ops without a kernel-level lowering are reported
    with their layer.
  }];
  let dependentDialects = ["::mlir::fmk::FmkDialect"];
}

def FusePass : Pass<"fm-fuse", "mlir::ModuleOp"> {
  let summary = "Fuses projections, residual adds and row ops into kernels";
  let description = [{
    Three fusions at the kernel level: (1) matmuls of one input (Q/K/V,
    gate/up) become one matmul over the stacked weights, followed by column
    slices (matmuls with a bias or an activation epilogue stay apart);
    (2) a residual add of a matmul result is folded into the matmul
    (`acc`), which accumulates in place, after its bias (the ViT blocks'
    proj and fc2; never into a matmul with an activation, which would see
    the sum); (3) every run of row ops (norms,
    RoPE, q/k norms, fake-quant, cache writes, SwiGLU, adds) becomes one
    `fmk.group`, compiled to one native kernel. Groups with the same body
    share a kernel name, so each distinct kernel is compiled once. Inside an
    `fmk.tracks` each region is fused on its own (tracks may run
    concurrently, so nothing merges across them).
  }];
  let dependentDialects = ["::mlir::fmk::FmkDialect"];
}

def PlanMemoryPass : Pass<"fm-plan-memory", "mlir::ModuleOp"> {
  let summary = "Assigns every activation a static offset in its phase's arena";
  let description = [{
    For each phase function, every activation gets a buffer of
    rows x width floats (rows = `max-rows` for prefill phases, 1 for decode
    and for last-position values), placed first-fit by liveness in a single
    arena; an in-place accumulating matmul shares its accumulator's buffer.
    Results: `fmk.buffers` (offsets in floats) on each op, `fmk.arena_floats`
    and `fmk.max_rows` on each function. An `encode_image` phase has static
    shapes: its image argument gets a buffer too (`fmk.image_buffer`),
    `fmk.max_rows` is its output's rows, and an `fmk.drop_rows` view lies
    inside its input's buffer.
  }];
  let options = [
    Option<"maxRows", "max-rows", "int64_t", /*default=*/"64",
           "the most tokens one prefill call processes">
  ];
}

def PartitionTracksPass : Pass<"fm-partition-tracks", "mlir::ModuleOp"> {
  let summary = "Places the tracks of every track block on MPI ranks";
  let description = [{
    Runs on the kernel level (after `fm-lower-to-kernels`). With N ranks and
    T tracks, rank r gets tracks [r*T/N, (r+1)*T/N) of every `fmk.tracks`
    (contiguous; when N does not divide T the counts differ by at most one),
    recorded as its `ranks`, so a track's layers, experts and KV cache stay
    together; the block's `fmk.all_reduce` gets the rank of each partial and
    is the one collective of the block: L/D per token instead of the 2L of
    tensor parallelism. A partition that would split a track (N > T) would
    need collectives inside the block and is rejected. With N = 1 nothing is
    placed and each combine becomes row adds and a scale.
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"1",
           "the number of MPI ranks">
  ];
  let dependentDialects = ["::mlir::fmk::FmkDialect"];
}

def QuantizeWeightsPass : Pass<"fm-quantize-weights", "mlir::ModuleOp"> {
  let summary = "Chooses a grouped low-bit format for every projection weight";
  let description = [{
    Records `#fm.quant<bits, group, grid, scale = f16>` on the parameters of
    every projection (attention q/k/v/qkv/o, MLP and expert gate/up/down),
    `embed-bits` on the token embedding and the LM head (tied or not: the
    logits are the most sensitive projection), and leaves norms, routers,
    gates of shared experts and KV scales in full precision. A weight whose input dimension is not a
    multiple of the group stays unquantized (warning). With `kv-bits=8`,
    caches whose writers carry per-layer K/V scales (afm7) become int8.
    With `float-storage=f16`, every weight that a runtime micro-kernel reads
    (projections, experts and routers, the embedding, the LM head) and that
    stays unpacked gets `storage = f16` (half the bytes; the kernels widen
    it in registers); norms, biases and scales, which generated kernels
    read, stay f32. The pass only annotates: the artifact writer packs or
    converts the bytes, one tensor at a time, choosing each group's scale to
    minimize squared error.
    The options above apply to the language model only: the ops of an
    `encode_image` function (the image encoder and its adapter) follow
    `vision-bits` and `vision-float-storage` instead, which cover their
    linear weights (qkv, proj, fc1, fc2 and the adapter's linear); the
    patch embedding, the 3x3 convolution, LayerNorms, biases, positions,
    registers and rel-pos tables stay f32 (the kernels that read them take
    f32 only).
  }];
  let options = [
    Option<"bits", "bits", "int64_t", /*default=*/"2",
           "bits per weight: 2, 4 or 8 (0: projections stay f32)">,
    Option<"group", "group", "int64_t", /*default=*/"64", "weights per scale: 32, 64 or 128">,
    Option<"grid", "grid", "std::string", /*default=*/"\"balanced\"",
           "balanced ({-1.5,-0.5,0.5,1.5} x s for 2 bits) or affine">,
    Option<"embedBits", "embed-bits", "std::string", /*default=*/"\"none\"",
           "token embedding: 4, 8 or none">,
    Option<"kvBits", "kv-bits", "std::string", /*default=*/"\"none\"",
           "KV cache: 8 or none">,
    Option<"floatStorage", "float-storage", "std::string", /*default=*/"\"f32\"",
           "unpacked micro-kernel weights: f32 or f16">,
    Option<"visionBits", "vision-bits", "int64_t", /*default=*/"0",
           "image encoder linear weights: 4 or 8 bits (0: they stay f32)">,
    Option<"visionFloatStorage", "vision-float-storage", "std::string",
           /*default=*/"\"f32\"",
           "image encoder linear weights left unpacked: f32 or f16">
  ];
}

#endif // FM_PASSES_TD
