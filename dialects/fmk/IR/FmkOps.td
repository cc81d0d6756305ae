// The fmk dialect: the kernel level between the fm model graph and code.
// Hot operations are runtime micro-kernels (matmul, attention); row-wise
// glue (norms, RoPE, q/k norms, KV fake-quant, cache writes, SwiGLU, adds)
// is grouped by fm-fuse into fmk.group ops that the target compiles.
#ifndef FMK_OPS_TD
#define FMK_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Fmk_Dialect : Dialect {
  let name = "fmk";
  let cppNamespace = "::mlir::fmk";
  let summary = "Kernel-level IR of fm programs";
  let description = [{
    The level at which an fm model is a sequence of kernel calls over 2-D f32
    activations `tensor<rows x width x f32>`: micro-kernels that the runtime
    provides (`fmk.embed`, `fmk.matmul`, `fmk.attention`, `fmk.take_last`)
    and groups of row-wise ops (`fmk.group`) that fmc compiles to native
    code. Weights stay `fm.param` values. After `fm-plan-memory`, every
    activation has a static offset in its phase's arena (`fmk.buffers`).
  }];
  let extraClassDeclaration = [{
    /// Discardable attributes set by fm-plan-memory.
    static constexpr ::llvm::StringLiteral kBuffersAttr = "fmk.buffers";
    static constexpr ::llvm::StringLiteral kArenaAttr = "fmk.arena_floats";
    static constexpr ::llvm::StringLiteral kMaxRowsAttr = "fmk.max_rows";
    /// encode_image: the image argument's offset (floats) in the arena.
    static constexpr ::llvm::StringLiteral kImageBufferAttr = "fmk.image_buffer";
  }];
}

class Fmk_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fmk_Dialect, mnemonic, traits>;

def Fmk_Act : 2DTensorOf<[F32]>;
def Fmk_Weight : RankedTensorOf<[F32, F16, BF16]>;

def Fmk_KvPart : I32EnumAttr<"KvPart", "K or V half of a cache slot", [
    I32EnumAttrCase<"k", 0>, I32EnumAttrCase<"v", 1>]> {
  let cppNamespace = "::mlir::fmk";
}

def Fmk_RopeStyle : I32EnumAttr<"RopeStyle", "RoPE pairs", [
    I32EnumAttrCase<"half", 1>, I32EnumAttrCase<"interleaved", 2>]> {
  let cppNamespace = "::mlir::fmk";
}

// The GELU family of a matmul epilogue (the ViT MLPs).
def Fmk_Activation : I32EnumAttr<"Activation", "matmul epilogue", [
    I32EnumAttrCase<"gelu", 1>, I32EnumAttrCase<"gelu_tanh", 2>,
    I32EnumAttrCase<"quick_gelu", 3>]> {
  let cppNamespace = "::mlir::fmk";
}

//===----------------------------------------------------------------------===//
// Micro-kernels
//===----------------------------------------------------------------------===//

def Fmk_EmbedOp : Fmk_Op<"embed", [Pure]> {
  let summary = "gathers embedding rows (micro-kernel)";
  let description = [{
    ```mlir
    %x = fmk.embed %tokens, %table : tensor<?xi32>, tensor<256x64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[I32]>:$tokens, Fmk_Weight:$table);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = [{
    $tokens `,` $table attr-dict `:` type($tokens) `,` type($table) `->` type($result)
  }];
}

def Fmk_MatmulOp : Fmk_Op<"matmul", [Pure, AttrSizedOperandSegments]> {
  let summary = "act(x · concat(weights)ᵀ + bias) (+ acc), a runtime micro-kernel";
  let description = [{
    The weights are nn.Linear matrices [out, in] stacked along their output
    rows (fm-fuse merges the projections of one input this way: QKV,
    gate/up). With `acc`, the product is added to `acc` in place (fm-fuse
    folds residual adds into it), so `acc` must have no later use. The
    epilogue adds `bias` (an f32 [out] vector) and then applies
    `activation` (the GELU family; never with `acc`, which would feed it
    the sum): the ViT blocks' linear layers.

    ```mlir
    %y = fmk.matmul %x weights(%wq, %wk : tensor<64x64xf32>, tensor<32x64xf32>)
           : tensor<?x64xf32> -> tensor<?x96xf32>
    %r = fmk.matmul %a weights(%wo : tensor<64x64xf32>) acc(%x : tensor<?x64xf32>)
           : tensor<?x64xf32> -> tensor<?x64xf32>
    %h = fmk.matmul %n weights(%w1 : tensor<256x64xf32>) bias(%b1 : tensor<256xf32>)
           then gelu : tensor<100x64xf32> -> tensor<100x256xf32>
    ```
  }];
  let arguments = (ins Fmk_Act:$input, Variadic<Fmk_Weight>:$weights,
                       Optional<Fmk_Act>:$acc, Optional<Fmk_Weight>:$bias,
                       OptionalAttr<Fmk_Activation>:$activation);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = [{
    $input `weights` `(` $weights `:` type($weights) `)` (`acc` `(` $acc^ `:` type($acc) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)? (`then` $activation^)?
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let builders = [
    // The projections of the decoders: no bias, no activation.
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::mlir::ValueRange":$weights, "::mlir::Value":$acc), [{
      build($_builder, $_state, result, input, weights, acc, ::mlir::Value(),
            ::mlir::fmk::ActivationAttr());
    }]>
  ];
}

def Fmk_AttentionOp : Fmk_Op<"attention", [AttrSizedOperandSegments]> {
  let summary = "causal GQA attention over a cache slot (micro-kernel)";
  let description = [{
    Queries are the rows of `q` at positions `pos`, `pos + 1`, …; keys and
    values are read from slot `slot` of `cache` (written before by
    `fmk.cache_write`), up to each query's position; `window` > 0 limits
    keys to the last `window` positions. An int8 cache is read with the
    per-layer scales `k_scale`/`v_scale` of the layer that wrote it.

    ```mlir
    %a = fmk.attention %q at %pos cache @kv [0] {num_heads = 4 : i64,
           num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 2.5e-01 : f64}
           : tensor<?x64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Fmk_Act:$q, Index:$pos, FlatSymbolRefAttr:$cache,
                       I64Attr:$slot, I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, F64Attr:$scale,
                       DefaultValuedAttr<I64Attr, "0">:$window,
                       Optional<Fmk_Weight>:$k_scale,
                       Optional<Fmk_Weight>:$v_scale);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = [{
    $q `at` $pos `cache` $cache `[` $slot `]`
    (`int8` `(` $k_scale^ `,` $v_scale `:` type($k_scale) `,` type($v_scale) `)`)?
    attr-dict `:` type($q) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fmk_TakeLastOp : Fmk_Op<"take_last", [Pure]> {
  let summary = "the last row and its position (for last-position-only layers)";
  let description = [{
    ```mlir
    %row, %p = fmk.take_last %x at %pos : tensor<?x64xf32> -> tensor<1x64xf32>
    ```
  }];
  let arguments = (ins Fmk_Act:$input, Index:$pos);
  let results = (outs Fmk_Act:$result, Index:$last_pos);
  let assemblyFormat = "$input `at` $pos attr-dict `:` type($input) `->` type($result)";
}

def Fmk_MoeOp : Fmk_Op<"moe", [Pure, AttrSizedOperandSegments]> {
  let summary = "mixture of SwiGLU experts with top-k routing (micro-kernel)";
  let description = [{
    The runtime's Moe command: router softmax, top-k (renormalized with
    `norm_topk_prob`), per-expert SwiGLU over the rows routed to it, weighted
    sum; the optional shared expert is gated by a sigmoid. With `acc`, the
    result is added to `acc` in place (a folded residual add).
  }];
  let arguments = (ins Fmk_Act:$input, Fmk_Weight:$router,
                       Variadic<Fmk_Weight>:$gate, Variadic<Fmk_Weight>:$up,
                       Variadic<Fmk_Weight>:$down,
                       Optional<Fmk_Weight>:$shared_gate,
                       Optional<Fmk_Weight>:$shared_up,
                       Optional<Fmk_Weight>:$shared_down,
                       Optional<Fmk_Weight>:$shared_expert_gate,
                       Optional<Fmk_Act>:$acc,
                       I64Attr:$top_k, UnitAttr:$norm_topk_prob);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = [{
    $input `router` `(` $router `:` type($router) `)`
    `gate` `(` $gate `:` type($gate) `)` `up` `(` $up `:` type($up) `)`
    `down` `(` $down `:` type($down) `)`
    (`shared_gate` `(` $shared_gate^ `:` type($shared_gate) `)`)?
    (`shared_up` `(` $shared_up^ `:` type($shared_up) `)`)?
    (`shared_down` `(` $shared_down^ `:` type($shared_down) `)`)?
    (`shared_expert_gate` `(` $shared_expert_gate^ `:` type($shared_expert_gate) `)`)?
    (`acc` `(` $acc^ `:` type($acc) `)`)?
    attr-dict `:` type($input) `->` type($result)
  }];
}

def Fmk_AllReduceOp : Fmk_Op<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "the combine of a track block: scale · Σ of the tracks' outputs";
  let description = [{
    The result is `scale` times the sum of `partials` (the outputs of the
    tracks of one `fmk.tracks`; `scale` is 1/T for a mean of T tracks).
    `fm-lower-to-kernels` emits it; `fm-partition-tracks` places it: in one
    process it becomes row adds and a scale, fused with what follows; over
    N ranks it stays a collective with `ranks` saying which rank computes
    each partial, and the runtime's AllReduce sums every rank's own
    partials and then across the ranks (one MPI_Allreduce).

    ```mlir
    %x = fmk.all_reduce %t#0, %t#1 {scale = 5.0e-01 : f64, ranks = array<i64: 0, 1>}
           : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Variadic<Fmk_Act>:$partials, F64Attr:$scale,
                       OptionalAttr<DenseI64ArrayAttr>:$ranks);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = "$partials attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Fmk_TracksOp : Fmk_Op<"tracks", [RecursiveMemoryEffects]> {
  let summary = "the tracks of one track block, one region each";
  let description = [{
    Region `t` holds the kernels of track `t` of track block `block`; each
    yields the track's output, which becomes result `t`. Tracks share no
    state: a region reads values from above (the block input, weights) but
    writes only its own, so a runtime may run the regions concurrently.
    Fusion and memory planning work inside each region; the combine is the
    `fmk.all_reduce` that follows. After `fm-partition-tracks` over N > 1
    ranks, `ranks` gives the MPI rank of each track.

    ```mlir
    %t:2 = fmk.tracks block 0 : tensor<?x64xf32>, tensor<?x64xf32> {
      ... fmk.yield %a : tensor<?x64xf32>
    }, {
      ... fmk.yield %b : tensor<?x64xf32>
    }
    ```
  }];
  let arguments = (ins I64Attr:$block, OptionalAttr<DenseI64ArrayAttr>:$ranks);
  let results = (outs Variadic<Fmk_Act>:$results);
  let regions = (region VariadicRegion<SizedRegion<1>>:$tracks);
  let assemblyFormat = [{
    `block` $block attr-dict `:` type($results) $tracks
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    unsigned getNumTracks() { return getTracks().size(); }
  }];
}

//===----------------------------------------------------------------------===//
// Image-encoder micro-kernels (docs/vit.md). Their shapes are static: an
// encode_image program runs once per image.
//===----------------------------------------------------------------------===//

def Fmk_PatchEmbedOp : Fmk_Op<"patch_embed", [Pure, AttrSizedOperandSegments]> {
  let summary = "patch embedding (+ position table, after the registers), a micro-kernel";
  let description = [{
    The image [C, H, W] in `patch` x `patch` patches (row-major), each
    flattened as (channel, row, column) and multiplied by `weight`
    ([dim, C, patch, patch] read as [dim, C·patch²]): one GEMM over the
    unfolded patches, plus `bias`, plus `pos` (patches x dim floats). With
    `registers` [R, dim] the result holds the registers first: what
    fm.patch_embed followed by fm.register_tokens computes.

    ```mlir
    %x = fmk.patch_embed %img, %w, %b pos(%p : tensor<1x10x10x64xf32>)
           registers(%r : tensor<2x64xf32>) {patch = 8 : i64}
           : tensor<3x80x80xf32>, tensor<64x3x8x8xf32>, tensor<64xf32> -> tensor<102x64xf32>
    ```
  }];
  let arguments = (ins 3DTensorOf<[F32]>:$image, Fmk_Weight:$weight,
                       Fmk_Weight:$bias, Optional<Fmk_Weight>:$pos,
                       Optional<Fmk_Weight>:$registers, I64Attr:$patch);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = [{
    $image `,` $weight `,` $bias (`pos` `(` $pos^ `:` type($pos) `)`)?
    (`registers` `(` $registers^ `:` type($registers) `)`)? attr-dict
    `:` type($image) `,` type($weight) `,` type($bias) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fmk_LayerNormOp : Fmk_Op<"layer_norm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "LayerNorm with weight and bias over each row, a micro-kernel";
  let arguments = (ins Fmk_Act:$input, Fmk_Weight:$weight, Fmk_Weight:$bias,
                       F64Attr:$eps);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:` type($input) `,` type($weight)
    `,` type($bias) `->` type($result)
  }];
}

def Fmk_VitAttentionOp : Fmk_Op<"vit_attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "ViT attention over projected qkv rows, a micro-kernel";
  let description = [{
    `qkv` holds `num_registers` + grid[0]·grid[1] rows [q; k; v] (the
    registers first); the result the heads' outputs. `window` 0: global
    attention; else ViTDet windows over the zero-padded grid, padded tokens
    taking `pad` (the qkv bias, or zeros without it) as their qkv row, and
    Register-Window registers (their outputs averaged over the windows).
    `rel_pos_h`/`rel_pos_w` add the decomposed relative-position bias to
    patch x patch scores. Semantics as fm.vit_attention without the
    projections.

    ```mlir
    %a = fmk.vit_attention %qkv pad(%b : tensor<192xf32>)
           {num_heads = 4 : i64, head_dim = 16 : i64, scale = 2.5e-01 : f64,
            window = 4 : i64, grid = array<i64: 10, 10>, num_registers = 2 : i64}
           : tensor<102x192xf32> -> tensor<102x64xf32>
    ```
  }];
  let arguments = (ins Fmk_Act:$qkv, Optional<Fmk_Weight>:$rel_pos_h,
                       Optional<Fmk_Weight>:$rel_pos_w, Optional<Fmk_Weight>:$pad,
                       I64Attr:$num_heads, I64Attr:$head_dim, F64Attr:$scale,
                       I64Attr:$window, DenseI64ArrayAttr:$grid,
                       I64Attr:$num_registers);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = [{
    $qkv (`rel_pos` `(` $rel_pos_h^ `,` $rel_pos_w `:` type($rel_pos_h) `,` type($rel_pos_w) `)`)?
    (`pad` `(` $pad^ `:` type($pad) `)`)? attr-dict `:` type($qkv) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fmk_Conv3x3Op : Fmk_Op<"conv3x3", [Pure]> {
  let summary = "3x3 convolution, zero padding 1, over a grid of tokens (im2col + GEMM)";
  let arguments = (ins Fmk_Act:$input, Fmk_Weight:$weight,
                       Optional<Fmk_Weight>:$bias, DenseI64ArrayAttr:$grid);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict
    `:` type($input) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fmk_AvgPoolOp : Fmk_Op<"avg_pool", [Pure]> {
  let summary = "the adapter's average pooling of a square grid of tokens";
  let description = [{
    `grid` x `grid` tokens to `out_grid` x `out_grid`: stride s = grid //
    out_grid, kernel grid - (out_grid - 1)·s, row-major.
  }];
  let arguments = (ins Fmk_Act:$input, I64Attr:$grid, I64Attr:$out_grid);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Fmk_DropRowsOp : Fmk_Op<"drop_rows", [Pure]> {
  let summary = "a view of the rows after the first `count` (no kernel)";
  let description = [{
    fm-plan-memory places the result inside its input's buffer, `count`
    rows in: dropping an encoder's register tokens copies nothing.

    ```mlir
    %p = fmk.drop_rows %x {count = 2 : i64} : tensor<102x64xf32> -> tensor<100x64xf32>
    ```
  }];
  let arguments = (ins Fmk_Act:$input, I64Attr:$count);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Row ops: each maps a row to a row; fm-fuse puts them into groups.
//===----------------------------------------------------------------------===//

def Fmk_RmsNormOp : Fmk_Op<"rms_norm", [Pure]> {
  let summary = "row RMSNorm";
  let arguments = (ins Fmk_Act:$input, Fmk_Weight:$weight, F64Attr:$eps);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
}

def Fmk_AddOp : Fmk_Op<"add", [Pure, AllTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "row add";
  let arguments = (ins Fmk_Act:$lhs, Fmk_Act:$rhs);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Fmk_AddBiasOp : Fmk_Op<"add_bias", [Pure]> {
  let summary = "adds a bias vector to every row";
  let arguments = (ins Fmk_Act:$input, Fmk_Weight:$bias);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = [{
    $input `,` $bias attr-dict `:` type($input) `,` type($bias) `->` type($result)
  }];
}

def Fmk_SiluMulOp : Fmk_Op<"silu_mul", [Pure, AllTypesMatch<["gate", "up", "result"]>]> {
  let summary = "SwiGLU gating: silu(gate) * up";
  let arguments = (ins Fmk_Act:$gate, Fmk_Act:$up);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

def Fmk_ScaleOp : Fmk_Op<"scale", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "multiplies every element by a constant (track mean)";
  let arguments = (ins Fmk_Act:$input, F64Attr:$factor);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Fmk_SliceColsOp : Fmk_Op<"slice_cols", [Pure]> {
  let summary = "columns [offset, offset + width) of every row";
  let arguments = (ins Fmk_Act:$input, I64Attr:$offset);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = "$input `[` $offset `]` attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Fmk_RopeOp : Fmk_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding of every head of a row";
  let description = [{
    Row r is at position `pos + r`; pair i of a head rotates by
    `(pos + r) * theta^(-2i/head_dim)`; `half` pairs (i, i + head_dim/2),
    `interleaved` pairs (2i, 2i + 1).
  }];
  let arguments = (ins Fmk_Act:$input, Index:$pos, I64Attr:$num_heads,
                       I64Attr:$head_dim, F64Attr:$theta,
                       Fmk_RopeStyle:$style);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = "$input `at` $pos attr-dict `:` type($result)";
}

def Fmk_HeadNormOp : Fmk_Op<"head_norm", [Pure]> {
  let summary = "RMSNorm of every head of a row (afm7 q_norm / k_norm)";
  let arguments = (ins Fmk_Act:$input, Fmk_Weight:$weight, I64Attr:$num_heads,
                       I64Attr:$head_dim, F64Attr:$eps);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
}

def Fmk_FakeQuantOp : Fmk_Op<"fake_quant", [Pure]> {
  let summary = "round to the int8 grid of a scalar scale and back";
  let description = [{ `clamp(roundeven(x / s), -128, 127) * s`. }];
  let arguments = (ins Fmk_Act:$input, Fmk_Weight:$scale);
  let results = (outs Fmk_Act:$result);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` type($input) `,` type($scale) `->` type($result)
  }];
}

def Fmk_CacheWriteOp : Fmk_Op<"cache_write"> {
  let summary = "stores rows as K or V of a cache slot at their positions";
  let description = [{
    With `scale` (a 0-d weight), the cache holds int8: each value is stored
    as clamp(roundeven(x / scale), -128, 127).
  }];
  let arguments = (ins Fmk_Act:$input, Index:$pos, FlatSymbolRefAttr:$cache,
                       I64Attr:$slot, Fmk_KvPart:$part,
                       Optional<Fmk_Weight>:$scale);
  let assemblyFormat = [{
    $input `at` $pos `into` $cache `[` $slot `]` $part
    (`scale` `(` $scale^ `:` type($scale) `)`)? attr-dict `:` type($input)
  }];
}

//===----------------------------------------------------------------------===//
// Fusion groups
//===----------------------------------------------------------------------===//

def Fmk_GroupOp : Fmk_Op<"group", [IsolatedFromAbove, SingleBlock]> {
  let summary = "row ops fused into one generated kernel";
  let description = [{
    The body sees the group's operands as block arguments and yields the
    values that leave the group; intermediate rows never touch memory
    outside the kernel. `kernel` names the generated function.

    ```mlir
    %n = fmk.group "g0" (%x, %w) : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32> {
    ^bb0(%a: tensor<?x64xf32>, %b: tensor<64xf32>):
      %r = fmk.rms_norm %a, %b {eps = 1.0e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
      fmk.yield %r : tensor<?x64xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kernel `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
}

def Fmk_YieldOp : Fmk_Op<"yield", [Pure, Terminator,
                                   ParentOneOf<["GroupOp", "TracksOp"]>]> {
  let summary = "the rows that leave a group, or a track's output";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // FMK_OPS_TD
