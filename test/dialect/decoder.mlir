// Round trip of the decoder ops: fm.embedding, fm.rms_norm, fm.add, every form of fm.attention, fm.mlp (swiglu/gelu), fm.take_last and fm.lm_head (tied/untied).
// RUN: fm-opt %s -split-input-file | fm-opt -split-input-file | FileCheck %s
// RUN: fm-opt %s -split-input-file > %t.1 && fm-opt %t.1 -split-input-file > %t.2 && diff %t.1 %t.2

// Embedding, RMSNorm and the residual add, with a dynamic sequence length.
// CHECK-LABEL: func.func @embed_norm_add
// CHECK:      %[[EMB:.*]] = fm.param "model.embed_tokens.weight" : tensor<128x64xbf16>
// CHECK-NEXT: %[[X:.*]] = fm.embedding %{{.*}}, %[[EMB]] : tensor<?xi32>, tensor<128x64xbf16> -> tensor<?x64xf32>
// CHECK-NEXT: %[[NW:.*]] = fm.param "model.layers.0.input_layernorm.weight" : tensor<64xf32>
// CHECK-NEXT: %[[N:.*]] = fm.rms_norm %[[X]], %[[NW]] {eps = 9.9999999999999995E-7 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
// CHECK-NEXT: fm.add %[[X]], %[[N]] : tensor<?x64xf32>
func.func @embed_norm_add(%tokens: tensor<?xi32>) -> tensor<?x64xf32> {
  %emb = fm.param "model.embed_tokens.weight" : tensor<128x64xbf16>
  %x = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<128x64xbf16> -> tensor<?x64xf32>
  %w = fm.param "model.layers.0.input_layernorm.weight" : tensor<64xf32>
  %n = fm.rms_norm %x, %w {eps = 1.0e-06 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %h = fm.add %x, %n : tensor<?x64xf32>
  return %h : tensor<?x64xf32>
}

// -----

// Static token counts: 8 tokens make 8 rows; a dynamic result also accepts them.
// CHECK-LABEL: func.func @embed_static
// CHECK: fm.embedding %{{.*}}, %{{.*}} : tensor<8xi32>, tensor<128x64xf32> -> tensor<8x64xf32>
// CHECK: fm.embedding %{{.*}}, %{{.*}} : tensor<8xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
// CHECK: fm.add %{{.*}}, %{{.*}} : tensor<8x64xf32>
func.func @embed_static(%tokens: tensor<8xi32>) -> tensor<8x64xf32> {
  %emb = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %tokens, %emb : tensor<8xi32>, tensor<128x64xf32> -> tensor<8x64xf32>
  %y = fm.embedding %tokens, %emb : tensor<8xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
  %h = fm.add %x, %x : tensor<8x64xf32>
  return %h : tensor<8x64xf32>
}

// -----

// Separate q/k/v projections, GQA (4 query heads over 2 KV heads), HF RoPE, global.
// CHECK-LABEL: fm.model @attn_qkv_separate
// CHECK: fm.attention %{{.*}} at %{{.*}} q(%{{.*}} : tensor<64x64xf32>) k(%{{.*}} : tensor<32x64xf32>) v(%{{.*}} : tensor<32x64xf32>) o(%{{.*}} : tensor<64x64xf32>) cache @kv[0]
// CHECK-SAME: {head_dim = 16 : i64, kind = #fm<attention global>, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #fm<rope half>, rope_theta = 1.000000e+04 : f64, scale = 2.500000e-01 : f64}
// CHECK-SAME: : tensor<?x64xf32> -> tensor<?x64xf32>
fm.model @attn_qkv_separate attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %q = fm.param "model.layers.0.self_attn.q_proj.weight" : tensor<64x64xf32>
    %k = fm.param "model.layers.0.self_attn.k_proj.weight" : tensor<32x64xf32>
    %v = fm.param "model.layers.0.self_attn.v_proj.weight" : tensor<32x64xf32>
    %o = fm.param "model.layers.0.self_attn.o_proj.weight" : tensor<64x64xf32>
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope half>, rope_theta = 1.0e+04 : f64, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// Fused qkv projection ((4 + 2*2) * 16 = 128 rows), interleaved RoPE, bf16 weights.
// CHECK-LABEL: fm.model @attn_qkv_fused
// CHECK: fm.attention %{{.*}} at %{{.*}} qkv(%{{.*}} : tensor<128x64xbf16>) o(%{{.*}} : tensor<64x64xbf16>) cache @kv[0]
// CHECK-SAME: rope = #fm<rope interleaved>, rope_theta = 5.000000e+05 : f64
fm.model @attn_qkv_fused attributes {family = "afm7", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(2) head_dim(16) capacity(64) : bf16
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %qkv = fm.param "model.layers.0.self_attn.qkv_proj.weight" : tensor<128x64xbf16>
    %o = fm.param "model.layers.0.self_attn.out_proj.weight" : tensor<64x64xbf16>
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xbf16>) o(%o : tensor<64x64xbf16>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope interleaved>, rope_theta = 5.0e+05 : f64, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// Q/K/V biases (qwen2), MQA: 4 query heads over 1 KV head.
// CHECK-LABEL: fm.model @attn_biases
// CHECK: fm.attention %{{.*}} at %{{.*}} q(%{{.*}} : tensor<64x64xf32>) k(%{{.*}} : tensor<16x64xf32>) v(%{{.*}} : tensor<16x64xf32>) o(%{{.*}} : tensor<64x64xf32>)
// CHECK-SAME: q_bias(%{{.*}} : tensor<64xf32>) k_bias(%{{.*}} : tensor<16xf32>) v_bias(%{{.*}} : tensor<16xf32>) cache @kv[0]
// CHECK-SAME: num_heads = 4 : i64, num_kv_heads = 1 : i64
fm.model @attn_biases attributes {family = "qwen2_moe", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %q = fm.param "q" : tensor<64x64xf32>
    %k = fm.param "k" : tensor<16x64xf32>
    %v = fm.param "v" : tensor<16x64xf32>
    %o = fm.param "o" : tensor<64x64xf32>
    %qb = fm.param "q_bias" : tensor<64xf32>
    %kb = fm.param "k_bias" : tensor<16xf32>
    %vb = fm.param "v_bias" : tensor<16xf32>
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<16x64xf32>) v(%v : tensor<16x64xf32>) o(%o : tensor<64x64xf32>) q_bias(%qb : tensor<64xf32>) k_bias(%kb : tensor<16xf32>) v_bias(%vb : tensor<16xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope half>, rope_theta = 1.0e+06 : f64, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// Per-head q/k RMSNorms with their eps, plain multi-head attention (4 over 4).
// CHECK-LABEL: fm.model @attn_qk_norm
// CHECK: fm.attention %{{.*}} at %{{.*}} q({{.*}}) k({{.*}}) v({{.*}}) o({{.*}}) q_norm(%{{.*}} : tensor<16xf32>) k_norm(%{{.*}} : tensor<16xf32>) cache @kv[0]
// CHECK-SAME: num_heads = 4 : i64, num_kv_heads = 4 : i64, qk_norm_eps = 9.9999999999999995E-7 : f64
fm.model @attn_qk_norm attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(4) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %q = fm.param "q" : tensor<64x64xf32>
    %k = fm.param "k" : tensor<64x64xf32>
    %v = fm.param "v" : tensor<64x64xf32>
    %o = fm.param "o" : tensor<64x64xf32>
    %qn = fm.param "q_norm" : tensor<16xf32>
    %kn = fm.param "k_norm" : tensor<16xf32>
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<64x64xf32>) v(%v : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) q_norm(%qn : tensor<16xf32>) k_norm(%kn : tensor<16xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope half>, rope_theta = 1.0e+04 : f64, kind = #fm<attention global>, qk_norm_eps = 1.0e-06 : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// K/V scales fake-quantize into an int8 cache.
// CHECK-LABEL: fm.model @attn_i8_cache
// CHECK: fm.kv_cache @kv layers(1) kv_heads(2) head_dim(16) capacity(64) : i8
// CHECK: fm.attention %{{.*}} at %{{.*}} qkv(%{{.*}} : tensor<128x64xf32>) o(%{{.*}} : tensor<64x64xf32>) k_scale(%{{.*}} : tensor<f32>) v_scale(%{{.*}} : tensor<f32>) cache @kv[0]
fm.model @attn_i8_cache attributes {family = "afm7", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(2) head_dim(16) capacity(64) : i8
  func.func @decode(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "decode"} {
    %qkv = fm.param "qkv" : tensor<128x64xf32>
    %o = fm.param "o" : tensor<64x64xf32>
    %ks = fm.param "model.layers.0.self_attn.quant_key_scale" : tensor<f32>
    %vs = fm.param "model.layers.0.self_attn.quant_value_scale" : tensor<f32>
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) k_scale(%ks : tensor<f32>) v_scale(%vs : tensor<f32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope interleaved>, rope_theta = 5.0e+05 : f64, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// NoPE: rope none and no rope_theta; an odd head_dim is fine without RoPE.
// CHECK-LABEL: fm.model @attn_nope
// CHECK: fm.attention
// CHECK-SAME: {head_dim = 9 : i64, kind = #fm<attention global>, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope none>, scale = 3.300000e-01 : f64}
fm.model @attn_nope attributes {family = "pt_moe", vocab_size = 128 : i64, hidden_size = 18 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(9) capacity(64) : f32
  func.func @prefill(%x: tensor<?x18xf32>, %pos: index) -> tensor<?x18xf32> attributes {fm.phase = "prefill"} {
    %q = fm.param "q" : tensor<18x18xf32>
    %k = fm.param "k" : tensor<9x18xf32>
    %v = fm.param "v" : tensor<9x18xf32>
    %o = fm.param "o" : tensor<18x18xf32>
    %a = fm.attention %x at %pos q(%q : tensor<18x18xf32>) k(%k : tensor<9x18xf32>) v(%v : tensor<9x18xf32>) o(%o : tensor<18x18xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 9 : i64, scale = 0.33 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x18xf32> -> tensor<?x18xf32>
    return %a : tensor<?x18xf32>
  }
}

// -----

// Local (sliding-window) attention next to global attention, each owning a slot.
// CHECK-LABEL: fm.model @attn_local_global
// CHECK: fm.attention {{.*}} cache @kv[0] {{{.*}}kind = #fm<attention local>, layer = 0 : i64{{.*}}window = 4 : i64}
// CHECK: fm.attention {{.*}} cache @kv[1] {{{.*}}kind = #fm<attention global>, layer = 1 : i64{{.*}}scale = 2.500000e-01 : f64}
fm.model @attn_local_global attributes {family = "pt_moe", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %q = fm.param "q" : tensor<64x64xf32>
    %k = fm.param "k" : tensor<32x64xf32>
    %v = fm.param "v" : tensor<32x64xf32>
    %o = fm.param "o" : tensor<64x64xf32>
    %a0 = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope half>, rope_theta = 1.0e+04 : f64, kind = #fm<attention local>, window = 4 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %a1 = fm.attention %a0 at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [1] {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a1 : tensor<?x64xf32>
  }
}

// -----

// KV sharing: layer 2 reuses the slot of layer 1; it has only q (and a q_norm), no K/V.
// Reuse of an int8 cache needs no scales.
// CHECK-LABEL: fm.model @attn_reuse
// CHECK: fm.attention {{.*}} cache @kv[0] {{{.*}}layer = 0 : i64
// CHECK: fm.attention {{.*}} cache @kv[1] {{{.*}}layer = 1 : i64
// CHECK: fm.attention %{{.*}} at %{{.*}} q(%{{.*}} : tensor<64x64xf32>) o(%{{.*}} : tensor<64x64xf32>) q_norm(%{{.*}} : tensor<16xf32>) reuse cache @kv[1]
// CHECK-SAME: layer = 2 : i64
// CHECK: fm.attention {{.*}} reuse cache @kv[0] {{{.*}}layer = 3 : i64
fm.model @attn_reuse attributes {family = "afm7", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : i8
  func.func @decode(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "decode"} {
    %qkv = fm.param "qkv" : tensor<128x64xf32>
    %q = fm.param "q" : tensor<64x64xf32>
    %o = fm.param "o" : tensor<64x64xf32>
    %qn = fm.param "q_norm" : tensor<16xf32>
    %kn = fm.param "k_norm" : tensor<16xf32>
    %ks = fm.param "ks" : tensor<f32>
    %vs = fm.param "vs" : tensor<f32>
    %a0 = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) k_scale(%ks : tensor<f32>) v_scale(%vs : tensor<f32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope interleaved>, rope_theta = 5.0e+05 : f64, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    %a1 = fm.attention %a0 at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) q_norm(%qn : tensor<16xf32>) k_norm(%kn : tensor<16xf32>) k_scale(%ks : tensor<f32>) v_scale(%vs : tensor<f32>) cache @kv [1] {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope interleaved>, rope_theta = 5.0e+05 : f64, kind = #fm<attention global>, qk_norm_eps = 1.0e-05 : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %a2 = fm.attention %a1 at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) q_norm(%qn : tensor<16xf32>) reuse cache @kv [1] {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope interleaved>, rope_theta = 5.0e+05 : f64, kind = #fm<attention global>, qk_norm_eps = 1.0e-05 : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %a3 = fm.attention %a2 at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) reuse cache @kv [0] {layer = 3 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope interleaved>, rope_theta = 5.0e+05 : f64, kind = #fm<attention local>, window = 8 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a3 : tensor<?x64xf32>
  }
}

// -----

// The same slots are written once per phase: prefill and decode each write slot 0.
// CHECK-LABEL: fm.model @attn_two_phases
// CHECK: func.func @prefill
// CHECK: fm.attention {{.*}} cache @kv[0]
// CHECK: func.func @decode
// CHECK: fm.attention {{.*}} cache @kv[0]
fm.model @attn_two_phases attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(2) head_dim(16) capacity(64) : f16
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %qkv = fm.param "qkv" : tensor<128x64xf32>
    %o = fm.param "o" : tensor<64x64xf32>
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope half>, rope_theta = 1.0e+04 : f64, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
  func.func @decode(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "decode"} {
    %qkv = fm.param "qkv" : tensor<128x64xf32>
    %o = fm.param "o" : tensor<64x64xf32>
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope half>, rope_theta = 1.0e+04 : f64, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// SwiGLU MLP (gate/up/down).
// CHECK-LABEL: func.func @mlp_swiglu
// CHECK: fm.mlp %{{.*}} gate(%{{.*}} : tensor<172x64xf32>) up(%{{.*}} : tensor<172x64xf32>) down(%{{.*}} : tensor<64x172xf32>)
// CHECK-SAME: {activation = #fm<activation swiglu>, layer = 3 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
func.func @mlp_swiglu(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %g = fm.param "model.layers.3.mlp.gate_proj.weight" : tensor<172x64xf32>
  %u = fm.param "model.layers.3.mlp.up_proj.weight" : tensor<172x64xf32>
  %d = fm.param "model.layers.3.mlp.down_proj.weight" : tensor<64x172xf32>
  %y = fm.mlp %x gate(%g : tensor<172x64xf32>) up(%u : tensor<172x64xf32>) down(%d : tensor<64x172xf32>) {layer = 3 : i64, activation = #fm<activation swiglu>} : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// SwiGLU with biases on up and down.
// CHECK-LABEL: func.func @mlp_swiglu_biases
// CHECK: fm.mlp %{{.*}} gate({{.*}}) up({{.*}}) down({{.*}}) up_bias(%{{.*}} : tensor<96xf32>) down_bias(%{{.*}} : tensor<32xf32>)
// CHECK-SAME: activation = #fm<activation swiglu>
func.func @mlp_swiglu_biases(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %g = fm.param "g" : tensor<96x32xf32>
  %u = fm.param "u" : tensor<96x32xf32>
  %d = fm.param "d" : tensor<32x96xf32>
  %ub = fm.param "ub" : tensor<96xf32>
  %db = fm.param "db" : tensor<32xf32>
  %y = fm.mlp %x gate(%g : tensor<96x32xf32>) up(%u : tensor<96x32xf32>) down(%d : tensor<32x96xf32>) up_bias(%ub : tensor<96xf32>) down_bias(%db : tensor<32xf32>) {layer = 0 : i64, activation = #fm<activation swiglu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// GELU MLP without a gate, with and without biases.
// CHECK-LABEL: func.func @mlp_gelu
// CHECK: fm.mlp %{{.*}} up(%{{.*}} : tensor<48x32xf32>) down(%{{.*}} : tensor<32x48xf32>) up_bias(%{{.*}} : tensor<48xf32>) down_bias(%{{.*}} : tensor<32xf32>) {activation = #fm<activation gelu>, layer = 0 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
// CHECK: fm.mlp %{{.*}} up(%{{.*}} : tensor<48x32xf32>) down(%{{.*}} : tensor<32x48xf32>) {activation = #fm<activation gelu>, layer = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
func.func @mlp_gelu(%x: tensor<65x32xf32>) -> tensor<65x32xf32> {
  %u = fm.param "fc1.weight" : tensor<48x32xf32>
  %ub = fm.param "fc1.bias" : tensor<48xf32>
  %d = fm.param "fc2.weight" : tensor<32x48xf32>
  %db = fm.param "fc2.bias" : tensor<32xf32>
  %y = fm.mlp %x up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) up_bias(%ub : tensor<48xf32>) down_bias(%db : tensor<32xf32>) {layer = 0 : i64, activation = #fm<activation gelu>} : tensor<65x32xf32> -> tensor<65x32xf32>
  %z = fm.mlp %y up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 1 : i64, activation = #fm<activation gelu>} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %z : tensor<65x32xf32>
}

// -----

// Tied LM head: the weight is the embedding table's parameter (same key, even as a separate fm.param).
// CHECK-LABEL: func.func @lm_head_tied
// CHECK: fm.lm_head %{{.*}}, %{{.*}} {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
// CHECK: fm.lm_head %{{.*}}, %{{.*}} {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
func.func @lm_head_tied(%tokens: tensor<?xi32>) -> tensor<?x128xf32> {
  %emb = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
  %l = fm.lm_head %x, %emb {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %emb2 = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %l2 = fm.lm_head %x, %emb2 {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %l2 : tensor<?x128xf32>
}

// -----

// Untied LM head with its own weight.
// CHECK-LABEL: func.func @lm_head_untied
// CHECK: %[[W:.*]] = fm.param "lm_head.weight" : tensor<512x64xf16>
// CHECK-NEXT: fm.lm_head %{{.*}}, %[[W]] : tensor<?x64xf32>, tensor<512x64xf16> -> tensor<?x512xf32>
// CHECK-NOT: tied
func.func @lm_head_untied(%x: tensor<?x64xf32>) -> tensor<?x512xf32> {
  %w = fm.param "lm_head.weight" : tensor<512x64xf16>
  %l = fm.lm_head %x, %w : tensor<?x64xf32>, tensor<512x64xf16> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}

// -----

// take_last: the last row and its position, then the head on that one row.
// CHECK-LABEL: func.func @take_last
// CHECK: %[[ROW:.*]], %[[LAST:.*]] = fm.take_last %{{[a-z0-9_]+}} at %{{[a-z0-9_]+}} : tensor<?x64xf32> -> tensor<1x64xf32>
// CHECK-NEXT: fm.lm_head %[[ROW]], %{{[a-z0-9_]+}} : tensor<1x64xf32>, tensor<128x64xf32> -> tensor<1x128xf32>
// CHECK: return %{{.*}}, %[[LAST]] : tensor<1x128xf32>, index
func.func @take_last(%x: tensor<?x64xf32>, %pos: index) -> (tensor<1x128xf32>, index) {
  %w = fm.param "lm_head.weight" : tensor<128x64xf32>
  %row, %last = fm.take_last %x at %pos : tensor<?x64xf32> -> tensor<1x64xf32>
  %l = fm.lm_head %row, %w : tensor<1x64xf32>, tensor<128x64xf32> -> tensor<1x128xf32>
  return %l, %last : tensor<1x128xf32>, index
}
