// Regression tests for verifier bugs found in review (negative sizes through unsigned getters, dynamic sizes printed as numbers, reuse before a later track, misplaced caches, duplicate phases, ...). Each case is named after the bug it pins.
// RUN: fm-opt %s -split-input-file -verify-diagnostics

// Bug 1 (unsigned I64Attr getters): getVocabSize()/getHiddenSize() return uint64_t, so "<= 0" only catches 0 and a negative size is accepted.
// expected-error @+1 {{'fm.model' op model 'm': vocab_size and hidden_size must be positive}}
fm.model @m attributes {family = "llama", vocab_size = -5 : i64, hidden_size = 64 : i64} {
}

// -----

// Bug 1: same, hidden_size.
// expected-error @+1 {{'fm.model' op model 'm': vocab_size and hidden_size must be positive}}
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = -64 : i64} {
}

// -----

// Bug 1: KvCacheOp::verify compares uint64_t sizes with "<= 0": negative sizes are accepted.
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op KV cache @kv: layers must be positive, got -2}}
  fm.kv_cache @kv layers(-2) kv_heads(2) head_dim(16) capacity(64) : f32
}

// -----

// Bug 1: same, kv_heads.
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op KV cache @kv: kv_heads must be positive, got -1}}
  fm.kv_cache @kv layers(2) kv_heads(-1) head_dim(16) capacity(64) : f32
}

// -----

// Bug 1: same, head_dim.
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op KV cache @kv: head_dim must be positive, got -16}}
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(-16) capacity(64) : f32
}

// -----

// Bug 1: same, capacity.
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op KV cache @kv: capacity must be positive, got -64}}
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(-64) : f32
}

// -----

// Bug 1: AttentionOp::verify tests "*getWindow() <= 0" on a uint64_t: a negative local window is accepted.
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %qkv: tensor<128x64xf32>, %o: tensor<64x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.attention' op layer 0: local attention needs a window > 0, got -4}}
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention local>, window = -4 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// Bug 1: "getCacheSlot() < 0" is always false (uint64_t); slot -1 is still rejected by the upper bound, but the
// message reads "slot 18446744073709551615 of @kv".
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %qkv: tensor<128x64xf32>, %o: tensor<64x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.attention' op layer 0: slot -1 of @kv is out of range (the cache has 2 slots)}}
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [-1] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// Bug 1: TrackBlockOp::verify tests "getDepth() <= 0" on a uint64_t: depth -1 passes that rule and is then reported
// as "has 0 layers, but the block has depth 18446744073709551615".
func.func @f(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.track_block' op track block 0: depth must be positive}}
  %y = fm.track_block %x {block = 0 : i64, depth = -1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>) {
      fm.yield %t : tensor<?x32xf32>
    }
  return %y : tensor<?x32xf32>
}

// -----

// Bug 1: VitAttentionOp::verify tests "*getWindow() <= 0" on a uint64_t: window -3 is accepted on a 6x6 grid
// (6 % -3 == 0).
func.func @f(%x: tensor<37x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<37x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: window attention needs a window > 0}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = -3 : i64, grid = array<i64: 6, 6>, num_registers = 1 : i64} : tensor<37x32xf32> -> tensor<37x32xf32>
  return %a : tensor<37x32xf32>
}

// -----

// Bug 2 (missing rule): fm.vl_adapter never checks num_registers; -1 registers + 4x4 patches "matches" 15 tokens.
// fm.vit_attention rejects a negative count.
func.func @f(%h: tensor<15x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: num_registers must be non-negative, got -1}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 4, 4>, num_registers = -1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<15x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

// Bug 3 (rule does not fire): ModelOp::verifyRegions only orders writer and reader when they share a block. A layer
// that reuses a slot which a track of a LATER block writes is accepted (the reader's region is an ancestor of the
// writer's, so neither the "comes after it" nor the "another track" rule fires).
fm.model @m attributes {family = "pt_moe", vocab_size = 64 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %qkv: tensor<128x64xf32>, %o: tensor<64x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.attention' op layer 0 reuses the KV cache of track 0 of block 0, layer 1, which comes after it}}
    %a0 = fm.attention %x at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) reuse cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    %y = fm.track_block %a0 {block = 0 : i64, depth = 1 : i64, combine = #fm<combine sum>} : tensor<?x64xf32>
      track (%t: tensor<?x64xf32>) {
        %a1 = fm.attention %t at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
        fm.yield %a1 : tensor<?x64xf32>
      }
    return %y : tensor<?x64xf32>
  }
}

// -----

// Bug 4 (bad message): FmDialect::verifyOperationAttribute streams the StringAttr name, which prints quoted:
// "unknown fm attribute '"fm.layer"'".
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  // expected-error @+1 {{unknown fm attribute 'fm.layer'}}
  func.func @prefill(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill", fm.layer = 3 : i64} {
    return %x : tensor<?x64xf32>
  }
}

// -----

// Bug 5 (bad message): a tied lm_head whose weight is not an fm.param prints an empty name and a double space:
// "lm_head is tied, but its weight  is not the token embedding table".
func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{'fm.lm_head' op lm_head is tied, but its weight is not the token embedding table}}
  %l = fm.lm_head %x, %w {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}

// -----

// Bug 6 (bad message): a dynamic result width is printed as the raw kDynamic value: "embedding of width 64 cannot
// produce activations of width -9223372036854775808". 
func.func @f(%t: tensor<?xi32>) -> tensor<?x?xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  // expected-error @+1 {{'fm.embedding' op embedding of width 64 cannot produce activations of width ?}}
  %x = fm.embedding %t, %e : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x?xf32>
  return %x : tensor<?x?xf32>
}

// -----

// Bug 6: same in fm.lm_head: "128 vocabulary rows cannot produce logits of width -9223372036854775808".
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x?xf32> {
  %w = fm.param "lm_head.weight" : tensor<128x64xf32>
  // expected-error @+1 {{'fm.lm_head' op lm_head: 128 vocabulary rows cannot produce logits of width ?}}
  %l = fm.lm_head %x, %w : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}

// -----

// Bug 6: same in fm.take_last: "take_last of [?, ?] must give [1, -9223372036854775808], got [1, 64]".
func.func @f(%x: tensor<?x?xf32>, %pos: index) -> tensor<1x64xf32> {
  // expected-error @+1 {{'fm.take_last' op take_last of [?, ?] must give [1, ?], got [1, 64]}}
  %r, %p = fm.take_last %x at %pos : tensor<?x?xf32> -> tensor<1x64xf32>
  return %r : tensor<1x64xf32>
}

// -----

// Bug 7 (garbage arithmetic on kDynamic): fm.patch_embed accepts a dynamic H/W and computes with kDynamic: here it says
// "result must be [0, 32] (-1152921504606846976x-1152921504606846976 patches), got [?, 32]" (with signed overflow),
// and a 3x?x64 image with a ?-row result is silently accepted.
func.func @f(%img: tensor<3x?x?xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.patch_embed' op patch_embed: the image must have a static shape, got 'tensor<3x?x?xf32>'}}
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x?x?xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<?x32xf32>
  return %p : tensor<?x32xf32>
}

// -----

// Bug 8 (bad message): a 1-D expert gate makes MoeOp::verify derive moe_intermediate_size = -1:
// "gate weight 'g' has shape [64], expected [-1, 64] (moe_intermediate_size=-1, ...)". fm.mlp says "up weight must be
// 2-D" in the same situation.
func.func @f(%x: tensor<?x64xf32>, %r: tensor<1x64xf32>, %u: tensor<32x64xf32>, %d: tensor<64x32xf32>) -> tensor<?x64xf32> {
  %g = fm.param "g" : tensor<64xf32>
  // expected-error @+1 {{'fm.moe' op layer 0: expert gate weight must be 2-D, got [64]}}
  %y = fm.moe %x router(%r : tensor<1x64xf32>) gate(%g : tensor<64xf32>) up(%u : tensor<32x64xf32>) down(%d : tensor<64x32xf32>) {layer = 0 : i64, num_experts = 1 : i64, top_k = 1 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Bug 9 (bad message): TrackBlockOp::parse puts the attr-dict in result.attributes without checking the inherent
// attributes, so a wrongly-typed combine is dropped and reported as "requires attribute 'combine'". The
// declarative ops say "failed to satisfy constraint" (e.g. 'rope' on fm.attention).
func.func @f(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{attribute 'combine' failed to satisfy constraint: how track outputs are reduced}}
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = "mean"} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>) {
      fm.yield %t : tensor<?x32xf32>
    }
  return %y : tensor<?x32xf32>
}

// -----

// Bug 10 (missing rule): fm.kv_cache is accepted outside an fm.model. An fm.attention in a plain function then
// finds a module-level cache, and the model's KV plan check never runs (two layers writing slot 0 are accepted).
// 
// expected-error @+1 {{'fm.kv_cache' op expects parent op 'fm.model'}}
fm.kv_cache @kv layers(1) kv_heads(2) head_dim(16) capacity(64) : f32

// -----

// Bug 11 (missing rule): the model description says "one func.func per phase", but two "prefill" functions are
// accepted (ModelOp::lookupPhase silently returns the first).
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  func.func @prefill(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    return %x : tensor<?x64xf32>
  }
  // expected-error @+1 {{model 'm' has two "prefill" phase functions}}
  func.func @prefill_again(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    return %x : tensor<?x64xf32>
  }
}
