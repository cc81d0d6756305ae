// The fm dialect's operations: model structure, parameters, caches, decoder
// layers, mixture of experts, parallel track blocks and the ViT encoder.
#ifndef FM_OPS_TD
#define FM_OPS_TD

include "FmBase.td"
include "FmAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Model structure
//===----------------------------------------------------------------------===//

def Fm_ModelOp : Fm_Op<"model", [Symbol, SymbolTable, IsolatedFromAbove,
                                 NoTerminator, SingleBlock]> {
  let summary = "a compiled model: its config, KV caches and phase functions";
  let description = [{
    The unit of compilation. Its body holds `fm.kv_cache` declarations and one
    `func.func` per phase, marked with `fm.phase`. `family` names the model
    family (`llama`, `afm7`, `pt_moe`, `mixtral`, `qwen2_moe`, `fm_vit`,
    `fm_vlm`); `config` keeps the checkpoint's config for the artifact's
    metadata; `weights` is the checkpoint directory that `fm.param` files
    are relative to.

    An image encoder is an `encode_image` phase: a [3, H, W] image in, the
    adapter's tokens out. `image_mean`, `image_std` (one value per channel)
    and `image_resample` (`bicubic` or `bilinear`) say how an image file
    becomes that tensor (docs/vit.md). A VLM also has decoder phases and an
    `image_token_index`: the placeholder token whose embedding rows the
    image tokens replace, so the encoder's output is `hidden_size` wide. An
    encoder alone has no decoder and `vocab_size` 0.

    The model verifier checks the KV cache plan of every phase: each cache
    slot is written by exactly one layer, and a layer that reuses a cache
    reads a slot that an earlier layer writes.

    ```mlir
    fm.model @tiny attributes {family = "llama", vocab_size = 512 : i64,
                               hidden_size = 64 : i64} {
      fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(256) : f32
      func.func @decode(%tokens: tensor<?xi32>, %pos: index)
          -> tensor<?x512xf32> attributes {fm.phase = "decode"} { ... }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$family,
                       I64Attr:$vocab_size, I64Attr:$hidden_size,
                       OptionalAttr<DictionaryAttr>:$config,
                       OptionalAttr<StrAttr>:$weights,
                       OptionalAttr<I64Attr>:$num_ranks,
                       OptionalAttr<I64Attr>:$image_token_index,
                       OptionalAttr<DenseF64ArrayAttr>:$image_mean,
                       OptionalAttr<DenseF64ArrayAttr>:$image_std,
                       OptionalAttr<StrAttr>:$image_resample);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
                                 "::llvm::StringRef":$family,
                                 "int64_t":$vocab, "int64_t":$hidden)>];
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    /// The phase function named `phase`, or null.
    ::mlir::Operation *lookupPhase(::llvm::StringRef phase);
    /// The phase of an image encoder.
    static constexpr ::llvm::StringLiteral kImagePhase = "encode_image";
  private:
    /// The image attributes against the encode_image phase (or its absence).
    ::mlir::LogicalResult verifyImageInput(::mlir::Operation *imagePhase);
  public:
  }];
}

def Fm_ParamOp : Fm_Op<"param", [Pure]> {
  let summary = "a named weight of the checkpoint";
  let description = [{
    Refers to the tensor `key` of the checkpoint (stored in `file`, relative to
    the model's `weights` directory); its data is never held in the IR. The
    result type is the checkpoint's shape and dtype. `quant` (a packed
    low-bit format) or `storage` (f16 or f32) records how
    `fm-quantize-weights` decided to store the parameter in the artifact;
    without either it is stored as f32.

    ```mlir
    %w = fm.param "model.layers.0.mlp.up_proj.weight" from "model.safetensors"
           : tensor<172x64xbf16>
    %q = fm.param "model.layers.0.mlp.up_proj.weight"
           {quant = #fm.quant<bits = 2, group = 64, grid = balanced, scale = f16>}
           : tensor<172x64xf32>
    %h = fm.param "model.embed_tokens.weight" {storage = f16} : tensor<512x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$key, OptionalAttr<StrAttr>:$file,
                       OptionalAttr<Fm_QuantAttr>:$quant,
                       OptionalAttr<TypeAttr>:$storage);
  let results = (outs Fm_Weight:$result);
  let assemblyFormat = "$key (`from` $file^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Fm_KvCacheOp : Fm_Op<"kv_cache", [Symbol, HasParent<"ModelOp">]> {
  let summary = "declares a KV cache: one K and one V slot per owning layer";
  let description = [{
    A cache of `layers` slots; each slot holds K and V for `capacity`
    positions of `kv_heads` heads of `head_dim` each, in `element_type`
    (f32, f16, bf16, or i8 with per-layer scales). Attention ops own a slot
    (`cache @kv[3]`) or reuse a slot owned by an earlier layer.

    ```mlir
    fm.kv_cache @kv layers(35) kv_heads(2) head_dim(128) capacity(4096) : i8
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$layers,
                       I64Attr:$kv_heads, I64Attr:$head_dim, I64Attr:$capacity,
                       TypeAttr:$element_type);
  let assemblyFormat = [{
    $sym_name `layers` `(` $layers `)` `kv_heads` `(` $kv_heads `)`
    `head_dim` `(` $head_dim `)` `capacity` `(` $capacity `)` attr-dict
    `:` $element_type
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes that one position costs in this cache (K and V, all slots).
    int64_t bytesPerToken();
  }];
}

//===----------------------------------------------------------------------===//
// Decoder building blocks
//===----------------------------------------------------------------------===//

def Fm_EmbeddingOp : Fm_Op<"embedding", [Pure]> {
  let summary = "looks up token embeddings";
  let description = [{
    ```mlir
    %x = fm.embedding %tokens, %table : tensor<?xi32>, tensor<512x64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[I32]>:$tokens, Fm_Weight:$table);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = [{
    $tokens `,` $table attr-dict `:` type($tokens) `,` type($table) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fm_RmsNormOp : Fm_Op<"rms_norm", [Pure]> {
  let summary = "RMSNorm over the feature dimension";
  let description = [{
    `y = x / sqrt(mean(x^2) + eps) * weight`.
    ```mlir
    %n = fm.rms_norm %x, %w {eps = 1.0e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Fm_Activation:$input, Fm_Weight:$weight, F64Attr:$eps);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fm_LayerNormOp : Fm_Op<"layer_norm", [Pure]> {
  let summary = "LayerNorm over the feature dimension (ViT)";
  let description = [{
    `y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias`.
    ```mlir
    %n = fm.layer_norm %x, %w, %b {eps = 1.0e-06 : f64} : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Fm_Activation:$input, Fm_Weight:$weight, Fm_Weight:$bias,
                       F64Attr:$eps);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:` type($input) `,` type($weight)
    `,` type($bias) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fm_AddOp : Fm_Op<"add", [Pure, SameOperandsAndResultType, Commutative]> {
  let summary = "residual add";
  let description = [{
    ```mlir
    %h = fm.add %x, %a : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Fm_Activation:$lhs, Fm_Activation:$rhs);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Fm_AttentionOp : Fm_Op<"attention", [AttrSizedOperandSegments]> {
  let summary = "causal multi-head attention with its projections and KV cache";
  let description = [{
    Projects the (already normalized) input to Q, K and V, applies RoPE
    (`rope = half | interleaved`, with `rope_theta`; `none` is NoPE), then the
    optional per-head RMSNorms `q_norm`/`k_norm` (afm7 applies them after
    RoPE), fake-quantizes K and V to int8 when `k_scale`/`v_scale` are given,
    writes K and V to its slot of `cache` at positions `pos .. pos+S-1`, and
    attends causally over the cache (GQA: query head h uses KV head
    h / (num_heads / num_kv_heads)), scaled by `scale`. `kind = local` limits
    a query at position i to keys j with i - window < j <= i. The heads are
    projected back by `o`.

    A layer with `reuse` owns no slot: it has no K/V projections and attends
    over the slot written by an earlier layer (KV sharing).

    ```mlir
    %a = fm.attention %n at %pos q(%wq : tensor<64x64xf32>)
           k(%wk : tensor<32x64xf32>) v(%wv : tensor<32x64xf32>)
           o(%wo : tensor<64x64xf32>) cache @kv [0]
           {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64,
            head_dim = 16 : i64, scale = 2.500000e-01 : f64,
            rope = #fm<rope half>, rope_theta = 1.000000e+04 : f64,
            kind = #fm<attention global>}
           : tensor<?x64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins
    Fm_Activation:$input, Index:$pos,
    Optional<Fm_Weight>:$q, Optional<Fm_Weight>:$k, Optional<Fm_Weight>:$v,
    Optional<Fm_Weight>:$qkv, Fm_Weight:$o,
    Optional<Fm_Weight>:$q_bias, Optional<Fm_Weight>:$k_bias,
    Optional<Fm_Weight>:$v_bias,
    Optional<Fm_Weight>:$q_norm, Optional<Fm_Weight>:$k_norm,
    Optional<Fm_Weight>:$k_scale, Optional<Fm_Weight>:$v_scale,
    I64Attr:$layer, I64Attr:$num_heads, I64Attr:$num_kv_heads,
    I64Attr:$head_dim, F64Attr:$scale,
    Fm_RopeStyleAttr:$rope, OptionalAttr<F64Attr>:$rope_theta,
    Fm_AttentionKindAttr:$kind, OptionalAttr<I64Attr>:$window,
    OptionalAttr<F64Attr>:$qk_norm_eps,
    FlatSymbolRefAttr:$cache, I64Attr:$cache_slot, UnitAttr:$reuse);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = [{
    $input `at` $pos
    (`q` `(` $q^ `:` type($q) `)`)?
    (`k` `(` $k^ `:` type($k) `)`)?
    (`v` `(` $v^ `:` type($v) `)`)?
    (`qkv` `(` $qkv^ `:` type($qkv) `)`)?
    `o` `(` $o `:` type($o) `)`
    (`q_bias` `(` $q_bias^ `:` type($q_bias) `)`)?
    (`k_bias` `(` $k_bias^ `:` type($k_bias) `)`)?
    (`v_bias` `(` $v_bias^ `:` type($v_bias) `)`)?
    (`q_norm` `(` $q_norm^ `:` type($q_norm) `)`)?
    (`k_norm` `(` $k_norm^ `:` type($k_norm) `)`)?
    (`k_scale` `(` $k_scale^ `:` type($k_scale) `)`)?
    (`v_scale` `(` $v_scale^ `:` type($v_scale) `)`)?
    (`reuse` $reuse^)? `cache` $cache `[` $cache_slot `]`
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool isLocal() { return getKind() == AttentionKind::local; }
    /// "layer 3" (or "track 1 layer 3" inside a track block), for messages.
    std::string describe();
  }];
}

def Fm_MlpOp : Fm_Op<"mlp", [Pure, AttrSizedOperandSegments]> {
  let summary = "feed-forward block: SwiGLU (decoders) or GELU (ViT)";
  let description = [{
    `swiglu`: `down(silu(gate(x)) * up(x))`; `gelu`: `down(gelu(up(x) + b1)) + b2`.
    ```mlir
    %f = fm.mlp %n gate(%g : tensor<172x64xf32>) up(%u : tensor<172x64xf32>)
           down(%d : tensor<64x172xf32>)
           {layer = 0 : i64, activation = #fm<activation swiglu>}
           : tensor<?x64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Fm_Activation:$input, Optional<Fm_Weight>:$gate,
                       Fm_Weight:$up, Fm_Weight:$down,
                       Optional<Fm_Weight>:$up_bias, Optional<Fm_Weight>:$down_bias,
                       I64Attr:$layer, Fm_ActivationAttr:$activation);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = [{
    $input (`gate` `(` $gate^ `:` type($gate) `)`)?
    `up` `(` $up `:` type($up) `)` `down` `(` $down `:` type($down) `)`
    (`up_bias` `(` $up_bias^ `:` type($up_bias) `)`)?
    (`down_bias` `(` $down_bias^ `:` type($down_bias) `)`)?
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fm_MoeOp : Fm_Op<"moe", [Pure, AttrSizedOperandSegments]> {
  let summary = "mixture of SwiGLU experts with top-k routing";
  let description = [{
    `p = softmax(router · x)` over `num_experts`, keep the `top_k` largest
    (lower index first on ties), renormalize them to sum 1 when
    `norm_topk_prob`, and return `sum_e p_e * expert_e(x)` with
    `expert_e(x) = down_e(silu(gate_e(x)) * up_e(x))`. No token is dropped;
    an expert that gets no token costs nothing. The optional shared expert
    (qwen2_moe) is always on, scaled by `sigmoid(shared_expert_gate · x)`.

    ```mlir
    %f = fm.moe %n router(%r : tensor<4x64xf32>)
           gate(%g0, %g1, %g2, %g3 : tensor<32x64xf32>, ...)
           up(%u0, %u1, %u2, %u3 : ...) down(%d0, %d1, %d2, %d3 : ...)
           {layer = 1 : i64, num_experts = 4 : i64, top_k = 2 : i64,
            norm_topk_prob}
           : tensor<?x64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Fm_Activation:$input, Fm_Weight:$router,
                       Variadic<Fm_Weight>:$gate, Variadic<Fm_Weight>:$up,
                       Variadic<Fm_Weight>:$down,
                       Optional<Fm_Weight>:$shared_gate,
                       Optional<Fm_Weight>:$shared_up,
                       Optional<Fm_Weight>:$shared_down,
                       Optional<Fm_Weight>:$shared_expert_gate,
                       I64Attr:$layer, I64Attr:$num_experts, I64Attr:$top_k,
                       UnitAttr:$norm_topk_prob);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = [{
    $input `router` `(` $router `:` type($router) `)`
    `gate` `(` $gate `:` type($gate) `)` `up` `(` $up `:` type($up) `)`
    `down` `(` $down `:` type($down) `)`
    (`shared_gate` `(` $shared_gate^ `:` type($shared_gate) `)`)?
    (`shared_up` `(` $shared_up^ `:` type($shared_up) `)`)?
    (`shared_down` `(` $shared_down^ `:` type($shared_down) `)`)?
    (`shared_expert_gate` `(` $shared_expert_gate^ `:` type($shared_expert_gate) `)`)?
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fm_LmHeadOp : Fm_Op<"lm_head", [Pure]> {
  let summary = "projects hidden states to vocabulary logits";
  let description = [{
    `logits = x · weightᵀ`. With `tied`, `weight` is the token embedding table.
    ```mlir
    %l = fm.lm_head %h, %emb {tied} : tensor<?x64xf32>, tensor<512x64xf32> -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Fm_Activation:$input, Fm_Weight:$weight, UnitAttr:$tied);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fm_TakeLastOp : Fm_Op<"take_last", [Pure]> {
  let summary = "the last position of a sequence, for layers that only feed the logits";
  let description = [{
    Returns the last row of `input` and its position (`pos + rows - 1`).
    fm-share-kv inserts it in the `prefill_last` phase before the layers
    that only feed the requested logits (the KV-reusing layers of afm7, or
    the final norm and LM head), so they run on one position.

    ```mlir
    %row, %p = fm.take_last %x at %pos : tensor<?x64xf32> -> tensor<1x64xf32>
    ```
  }];
  let arguments = (ins Fm_Activation:$input, Index:$pos);
  let results = (outs Fm_Activation:$result, Index:$last_pos);
  let assemblyFormat = "$input `at` $pos attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Parallel tracks
//===----------------------------------------------------------------------===//

def Fm_TrackBlockOp : Fm_Op<"track_block", [RecursiveMemoryEffects]> {
  let summary = "T independent tracks of D layers, reduced at the boundary";
  let description = [{
    A parallel-track block: each of the `num_tracks` regions is one track of
    `depth` layers. Every track starts from the block input (its region's one
    argument) and carries its own residual stream; nothing crosses between
    tracks inside the block. The block's result is the `mean` or `sum` of the
    values the tracks yield: the only synchronization of the block.
    (`fm-partition-tracks` places tracks on MPI ranks at the kernel level,
    on `fmk.tracks`.)

    ```mlir
    %y = fm.track_block %x {block = 0 : i64, depth = 2 : i64,
                            combine = #fm<combine mean>} : tensor<?x64xf32>
      track (%t0: tensor<?x64xf32>) { ... fm.yield %r0 : tensor<?x64xf32> }
      track (%t1: tensor<?x64xf32>) { ... fm.yield %r1 : tensor<?x64xf32> }
    ```
  }];
  let arguments = (ins Fm_Activation:$input, I64Attr:$block, I64Attr:$depth,
                       Fm_CombineAttr:$combine);
  let results = (outs Fm_Activation:$result);
  let regions = (region VariadicRegion<SizedRegion<1>>:$tracks);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$input, "int64_t":$block,
                                 "int64_t":$depth, "Combine":$combine,
                                 "unsigned":$numTracks)>];
  let extraClassDeclaration = [{
    unsigned getNumTracks() { return getTracks().size(); }
  }];
}

def Fm_YieldOp : Fm_Op<"yield", [Pure, Terminator, ReturnLike,
                                 ParentOneOf<["TrackBlockOp"]>]> {
  let summary = "ends a track with its residual stream";
  let arguments = (ins Fm_Activation:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// Vision encoder
//===----------------------------------------------------------------------===//

def Fm_PatchEmbedOp : Fm_Op<"patch_embed", [Pure]> {
  let summary = "splits an image into patches and projects them";
  let description = [{
    A `patch_size`-strided convolution over a [C, H, W] image (PyTorch's
    Conv2d, a cross-correlation; `weight` is [dim, C, patch, patch]); the
    result has (H / patch) * (W / patch) tokens in row-major patch order.
    The optional `pos` table is added (absolute position embedding), as
    [tokens, dim] or in the checkpoint's [1, H / patch, W / patch, dim].

    ```mlir
    %p = fm.patch_embed %img, %w, %b {patch_size = 16 : i64}
           : tensor<3x224x224xf32>, tensor<64x3x16x16xf32>, tensor<64xf32>
           -> tensor<196x64xf32>
    ```
  }];
  let arguments = (ins 3DTensorOf<[F32]>:$image, Fm_Weight:$weight,
                       Fm_Weight:$bias, Optional<Fm_Weight>:$pos,
                       I64Attr:$patch_size);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = [{
    $image `,` $weight `,` $bias (`pos` `(` $pos^ `:` type($pos) `)`)? attr-dict
    `:` type($image) `,` type($weight) `,` type($bias) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fm_RegisterTokensOp : Fm_Op<"register_tokens", [Pure]> {
  let summary = "prepends learned register tokens to the patch tokens";
  let description = [{
    ```mlir
    %r = fm.register_tokens %p, %reg : tensor<196x64xf32>, tensor<1x64xf32> -> tensor<197x64xf32>
    ```
  }];
  let arguments = (ins Fm_Activation:$input, Fm_Weight:$registers);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = [{
    $input `,` $registers attr-dict `:` type($input) `,` type($registers) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fm_VitAttentionOp : Fm_Op<"vit_attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "bidirectional ViT attention, global or windowed, with registers";
  let description = [{
    The attention of a pre-LN ViT block on its normed input (docs/vit.md):
    `qkv` projects every token to [q; k; v] (plus `qkv_bias`), the heads
    attend bidirectionally with `scale`, and `o` (plus `o_bias`) projects
    the concatenated heads back. Tokens are `num_registers` register tokens
    followed by a `grid[0]` x `grid[1]` grid of patch tokens.

    `global`: every token attends to every token. `window` (ViTDet): the
    normed grid is zero-padded at the bottom and right to whole `window` x
    `window` windows (a padded token's q, k, v are the qkv bias; it is not
    masked), each window's tokens attend over [the registers ; the window];
    each register attends once per window and its output is the mean over
    all windows (Register-Window), so registers carry global context
    between window layers. The grid need not be a multiple of the window.

    With `rel_pos_h` and `rel_pos_w` ([2S - 1, head_dim], S = the window,
    or the grid's height and width on a global layer), patch x patch scores
    get ViTDet's decomposed relative-position bias q . rel_pos_h[qy - ky +
    S - 1] + q . rel_pos_w[qx - kx + S - 1] from the unscaled q; scores that
    involve a register get none.

    ```mlir
    %a = fm.vit_attention %n qkv(%w : tensor<192x64xf32>) o(%o : tensor<64x64xf32>)
           rel_pos_h(%rh : tensor<13x16xf32>) rel_pos_w(%rw : tensor<13x16xf32>)
           {layer = 0 : i64, num_heads = 4 : i64, head_dim = 16 : i64,
            scale = 2.500000e-01 : f64, mode = #fm<vit_attention window>,
            window = 7 : i64, grid = array<i64: 10, 10>, num_registers = 1 : i64}
           : tensor<101x64xf32> -> tensor<101x64xf32>
    ```
  }];
  let arguments = (ins Fm_Activation:$input, Fm_Weight:$qkv, Fm_Weight:$o,
                       Optional<Fm_Weight>:$qkv_bias, Optional<Fm_Weight>:$o_bias,
                       Optional<Fm_Weight>:$rel_pos_h, Optional<Fm_Weight>:$rel_pos_w,
                       I64Attr:$layer, I64Attr:$num_heads, I64Attr:$head_dim,
                       F64Attr:$scale, Fm_VitAttentionModeAttr:$mode,
                       OptionalAttr<I64Attr>:$window, DenseI64ArrayAttr:$grid,
                       I64Attr:$num_registers);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = [{
    $input `qkv` `(` $qkv `:` type($qkv) `)` `o` `(` $o `:` type($o) `)`
    (`qkv_bias` `(` $qkv_bias^ `:` type($qkv_bias) `)`)?
    (`o_bias` `(` $o_bias^ `:` type($o_bias) `)`)?
    (`rel_pos_h` `(` $rel_pos_h^ `:` type($rel_pos_h) `)`)?
    (`rel_pos_w` `(` $rel_pos_w^ `:` type($rel_pos_w) `)`)?
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fm_DropRegistersOp : Fm_Op<"drop_registers", [Pure]> {
  let summary = "drops the register tokens in front of the patch tokens";
  let description = [{
    The first `num_registers` rows (the register tokens) are dropped: what
    an encoder does before its final norm, so that the adapter (and its
    transformer layers) see only the patch grid.

    ```mlir
    %p = fm.drop_registers %x {num_registers = 4 : i64} : tensor<104x64xf32> -> tensor<100x64xf32>
    ```
  }];
  let arguments = (ins Fm_Activation:$input, I64Attr:$num_registers);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Fm_VlAdapterOp : Fm_Op<"vl_adapter", [Pure]> {
  let summary = "vision-language adapter: linear, 3x3 conv, pooling to N tokens";
  let description = [{
    Turns the encoder's patch features (the square `grid` of patch tokens,
    after `num_registers` registers, which are dropped) into `num_tokens`
    tokens of the language model's width: a linear projection, a
    `conv_kernel` x `conv_kernel` convolution (Conv2d cross-correlation,
    weight [out, in, k, k]) with zero "same" padding over the grid, then
    average pooling to g_out x g_out = `num_tokens` tokens with stride s =
    g // g_out and kernel g - (g_out - 1) * s (the last window ends at the
    grid's edge); no activation between the steps. 1 <= g_out <= g. The
    adapter's transformer layers, if any, are ordinary ViT blocks before it.

    ```mlir
    %t = fm.vl_adapter %h proj(%pw, %pb : tensor<128x64xf32>, tensor<128xf32>)
           conv(%cw, %cb : tensor<128x128x3x3xf32>, tensor<128xf32>)
           {grid = array<i64: 14, 14>, num_registers = 1 : i64,
            conv_kernel = 3 : i64, num_tokens = 49 : i64}
           : tensor<197x64xf32> -> tensor<49x128xf32>
    ```
  }];
  let arguments = (ins Fm_Activation:$input, Fm_Weight:$proj_weight,
                       Fm_Weight:$proj_bias, Fm_Weight:$conv_weight,
                       Fm_Weight:$conv_bias, DenseI64ArrayAttr:$grid,
                       I64Attr:$num_registers, I64Attr:$conv_kernel,
                       I64Attr:$num_tokens);
  let results = (outs Fm_Activation:$result);
  let assemblyFormat = [{
    $input `proj` `(` $proj_weight `,` $proj_bias `:` type($proj_weight) `,` type($proj_bias) `)`
    `conv` `(` $conv_weight `,` $conv_bias `:` type($conv_weight) `,` type($conv_bias) `)`
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // FM_OPS_TD
