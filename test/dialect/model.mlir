// Round trip of the model structure: fm.model, fm.kv_cache (f32/f16/bf16/i8) and phase functions marked fm.phase (prefill, prefill_last, decode, encode_image).
// RUN: fm-opt %s -split-input-file | fm-opt -split-input-file | FileCheck %s
// RUN: fm-opt %s -split-input-file > %t.1 && fm-opt %t.1 -split-input-file > %t.2 && diff %t.1 %t.2

// A model with its optional config and weights, an f32 cache and two phases.
// CHECK-LABEL: fm.model @llama_tiny
// CHECK-SAME: attributes {config = {max_position_embeddings = 256 : i64, model_type = "llama"}, family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64, weights = "ckpt/llama-tiny"}
// CHECK-NEXT: fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(256) : f32
// CHECK-NEXT: func.func @prefill(%{{.*}}: tensor<?xi32>, %{{.*}}: index) -> tensor<?x128xf32> attributes {fm.phase = "prefill"}
// CHECK:      func.func @decode(%{{.*}}: tensor<?xi32>, %{{.*}}: index) -> tensor<?x128xf32> attributes {fm.phase = "decode"}
fm.model @llama_tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64,
                                 config = {model_type = "llama", max_position_embeddings = 256 : i64},
                                 weights = "ckpt/llama-tiny"} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(256) : f32
  func.func @prefill(%tokens: tensor<?xi32>, %pos: index) -> tensor<?x128xf32> attributes {fm.phase = "prefill"} {
    %emb = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
    %x = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
    %l = fm.lm_head %x, %emb {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
    return %l : tensor<?x128xf32>
  }
  func.func @decode(%tokens: tensor<?xi32>, %pos: index) -> tensor<?x128xf32> attributes {fm.phase = "decode"} {
    %emb = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
    %x = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
    %l = fm.lm_head %x, %emb {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
    return %l : tensor<?x128xf32>
  }
}

// -----

// An int8 KV cache (afm7): the cache is declared i8.
// CHECK-LABEL: fm.model @afm7_i8
// CHECK-SAME: family = "afm7"
// CHECK-NEXT: fm.kv_cache @kv layers(35) kv_heads(2) head_dim(128) capacity(4096) : i8
fm.model @afm7_i8 attributes {family = "afm7", vocab_size = 1024 : i64, hidden_size = 256 : i64} {
  fm.kv_cache @kv layers(35) kv_heads(2) head_dim(128) capacity(4096) : i8
}

// -----

// Half-precision caches, several per model (one per track in pt_moe).
// CHECK-LABEL: fm.model @half_caches
// CHECK-NEXT: fm.kv_cache @kv_f16 layers(4) kv_heads(8) head_dim(64) capacity(2048) : f16
// CHECK-NEXT: fm.kv_cache @kv_bf16 layers(1) kv_heads(1) head_dim(2) capacity(1) : bf16
fm.model @half_caches attributes {family = "pt_moe", vocab_size = 100 : i64, hidden_size = 32 : i64} {
  fm.kv_cache @kv_f16 layers(4) kv_heads(8) head_dim(64) capacity(2048) : f16
  fm.kv_cache @kv_bf16 layers(1) kv_heads(1) head_dim(2) capacity(1) : bf16
}

// -----

// An encoder: no cache, one "encode_image" phase with a static image input.
// CHECK-LABEL: fm.model @vit_only
// CHECK-SAME: family = "vit"
// CHECK-NOT: fm.kv_cache
// CHECK: func.func @encode(%{{.*}}: tensor<3x32x32xf32>) -> tensor<16x8xf32> attributes {fm.phase = "encode_image"}
fm.model @vit_only attributes {family = "vit", vocab_size = 1 : i64, hidden_size = 8 : i64} {
  func.func @encode(%image: tensor<3x32x32xf32>) -> tensor<16x8xf32> attributes {fm.phase = "encode_image"} {
    %w = fm.param "vision.patch_embed.weight" : tensor<8x3x8x8xf32>
    %b = fm.param "vision.patch_embed.bias" : tensor<8xf32>
    %p = fm.patch_embed %image, %w, %b {patch_size = 8 : i64} : tensor<3x32x32xf32>, tensor<8x3x8x8xf32>, tensor<8xf32> -> tensor<16x8xf32>
    return %p : tensor<16x8xf32>
  }
}

// -----

// A model may hold helper functions without fm.phase next to its phases, and
// the same model may sit next to other modules' content.
// CHECK-LABEL: fm.model @with_helper
// CHECK: func.func private @helper(tensor<?x64xf32>) -> tensor<?x64xf32>{{$}}
// CHECK: func.func @decode({{.*}}) -> tensor<?x64xf32> attributes {fm.phase = "decode"}
// CHECK: func.func @outside
fm.model @with_helper attributes {family = "llama", vocab_size = 8 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(64) capacity(16) : f32
  func.func private @helper(tensor<?x64xf32>) -> tensor<?x64xf32>
  func.func @decode(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "decode"} {
    return %x : tensor<?x64xf32>
  }
}
func.func @outside(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  return %x : tensor<?x64xf32>
}

// -----

// The prefill_last phase (prefill that only needs the last position's logits).
// CHECK-LABEL: fm.model @with_prefill_last
// CHECK: func.func @prefill_last({{.*}}) -> (tensor<1x64xf32>, index) attributes {fm.phase = "prefill_last"}
// CHECK: func.func @decode({{.*}}) -> tensor<?x64xf32> attributes {fm.phase = "decode"}
fm.model @with_prefill_last attributes {family = "afm7", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  func.func @prefill_last(%x: tensor<?x64xf32>, %pos: index) -> (tensor<1x64xf32>, index) attributes {fm.phase = "prefill_last"} {
    %r, %p = fm.take_last %x at %pos : tensor<?x64xf32> -> tensor<1x64xf32>
    return %r, %p : tensor<1x64xf32>, index
  }
  func.func @decode(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "decode"} {
    return %x : tensor<?x64xf32>
  }
}
