// A tiny afm7-shaped on-device model written by hand: 3 layers, the last
// of which reuses the KV cache of layer 1 (no K/V projections of its own),
// fused QKV, interleaved RoPE, q/k norms after RoPE, int8 KV cache.
// CHECK-LABEL: fm.model @afm7_tiny
// CHECK: fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(256) : i8
// CHECK: fm.attention {{.*}} reuse cache @kv[1]
fm.model @afm7_tiny attributes {family = "afm7", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(256) : i8
  func.func @prefill(%tokens: tensor<?xi32>, %pos: index) -> tensor<?x128xf32> attributes {fm.phase = "prefill"} {
    %emb = fm.param "model.embedding.weight" : tensor<128x64xf32>
    %x0 = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
    %n0a = fm.param "model.layers.0.input_layernorm.weight" : tensor<64xf32>
    %h0n = fm.rms_norm %x0, %n0a {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %qkv0 = fm.param "model.layers.0.self_attn.qkv_proj.weight" : tensor<128x64xf32>
    %o0 = fm.param "model.layers.0.self_attn.out_proj.weight" : tensor<64x64xf32>
    %qn0 = fm.param "model.layers.0.self_attn.q_norm.weight" : tensor<16xf32>
    %kn0 = fm.param "model.layers.0.self_attn.k_norm.weight" : tensor<16xf32>
    %ks0 = fm.param "model.layers.0.self_attn.quant_key_scale" : tensor<f32>
    %vs0 = fm.param "model.layers.0.self_attn.quant_value_scale" : tensor<f32>
    %a0 = fm.attention %h0n at %pos qkv(%qkv0 : tensor<128x64xf32>) o(%o0 : tensor<64x64xf32>) q_norm(%qn0 : tensor<16xf32>) k_norm(%kn0 : tensor<16xf32>) k_scale(%ks0 : tensor<f32>) v_scale(%vs0 : tensor<f32>) cache @kv [0] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, qk_norm_eps = 1.000000e-05 : f64, rope = #fm<rope interleaved>, rope_theta = 5.000000e+05 : f64, scale = 2.500000e-01 : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %r0 = fm.add %x0, %a0 : tensor<?x64xf32>
    %n0b = fm.param "model.layers.0.post_attention_layernorm.weight" : tensor<64xf32>
    %m0n = fm.rms_norm %r0, %n0b {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %gate0 = fm.param "model.layers.0.mlp.gate_proj.weight" : tensor<208x64xf32>
    %up0 = fm.param "model.layers.0.mlp.up_proj.weight" : tensor<208x64xf32>
    %down0 = fm.param "model.layers.0.mlp.down_proj.weight" : tensor<64x208xf32>
    %f0 = fm.mlp %m0n gate(%gate0 : tensor<208x64xf32>) up(%up0 : tensor<208x64xf32>) down(%down0 : tensor<64x208xf32>) {activation = #fm<activation swiglu>, layer = 0 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %y0 = fm.add %r0, %f0 : tensor<?x64xf32>
    %n1a = fm.param "model.layers.1.input_layernorm.weight" : tensor<64xf32>
    %h1n = fm.rms_norm %y0, %n1a {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %qkv1 = fm.param "model.layers.1.self_attn.qkv_proj.weight" : tensor<128x64xf32>
    %o1 = fm.param "model.layers.1.self_attn.out_proj.weight" : tensor<64x64xf32>
    %qn1 = fm.param "model.layers.1.self_attn.q_norm.weight" : tensor<16xf32>
    %kn1 = fm.param "model.layers.1.self_attn.k_norm.weight" : tensor<16xf32>
    %ks1 = fm.param "model.layers.1.self_attn.quant_key_scale" : tensor<f32>
    %vs1 = fm.param "model.layers.1.self_attn.quant_value_scale" : tensor<f32>
    %a1 = fm.attention %h1n at %pos qkv(%qkv1 : tensor<128x64xf32>) o(%o1 : tensor<64x64xf32>) q_norm(%qn1 : tensor<16xf32>) k_norm(%kn1 : tensor<16xf32>) k_scale(%ks1 : tensor<f32>) v_scale(%vs1 : tensor<f32>) cache @kv [1] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, qk_norm_eps = 1.000000e-05 : f64, rope = #fm<rope interleaved>, rope_theta = 5.000000e+05 : f64, scale = 2.500000e-01 : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %r1 = fm.add %y0, %a1 : tensor<?x64xf32>
    %n1b = fm.param "model.layers.1.post_attention_layernorm.weight" : tensor<64xf32>
    %m1n = fm.rms_norm %r1, %n1b {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %gate1 = fm.param "model.layers.1.mlp.gate_proj.weight" : tensor<208x64xf32>
    %up1 = fm.param "model.layers.1.mlp.up_proj.weight" : tensor<208x64xf32>
    %down1 = fm.param "model.layers.1.mlp.down_proj.weight" : tensor<64x208xf32>
    %f1 = fm.mlp %m1n gate(%gate1 : tensor<208x64xf32>) up(%up1 : tensor<208x64xf32>) down(%down1 : tensor<64x208xf32>) {activation = #fm<activation swiglu>, layer = 1 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %y1 = fm.add %r1, %f1 : tensor<?x64xf32>
    %n2a = fm.param "model.kv_reuse_layers.0.input_layernorm.weight" : tensor<64xf32>
    %h2n = fm.rms_norm %y1, %n2a {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %q2 = fm.param "model.kv_reuse_layers.0.self_attn.q_proj.weight" : tensor<64x64xf32>
    %o2 = fm.param "model.kv_reuse_layers.0.self_attn.out_proj.weight" : tensor<64x64xf32>
    %qn2 = fm.param "model.kv_reuse_layers.0.self_attn.q_norm.weight" : tensor<16xf32>
    %a2 = fm.attention %h2n at %pos q(%q2 : tensor<64x64xf32>) o(%o2 : tensor<64x64xf32>) q_norm(%qn2 : tensor<16xf32>) reuse cache @kv [1] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, qk_norm_eps = 1.000000e-05 : f64, rope = #fm<rope interleaved>, rope_theta = 5.000000e+05 : f64, scale = 2.500000e-01 : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %r2 = fm.add %y1, %a2 : tensor<?x64xf32>
    %n2b = fm.param "model.kv_reuse_layers.0.post_attention_layernorm.weight" : tensor<64xf32>
    %m2n = fm.rms_norm %r2, %n2b {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %gate2 = fm.param "model.kv_reuse_layers.0.mlp.gate_proj.weight" : tensor<208x64xf32>
    %up2 = fm.param "model.kv_reuse_layers.0.mlp.up_proj.weight" : tensor<208x64xf32>
    %down2 = fm.param "model.kv_reuse_layers.0.mlp.down_proj.weight" : tensor<64x208xf32>
    %f2 = fm.mlp %m2n gate(%gate2 : tensor<208x64xf32>) up(%up2 : tensor<208x64xf32>) down(%down2 : tensor<64x208xf32>) {activation = #fm<activation swiglu>, layer = 2 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %y2 = fm.add %r2, %f2 : tensor<?x64xf32>
    %fn = fm.param "model.output_norm.weight" : tensor<64xf32>
    %out = fm.rms_norm %y2, %fn {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %logits = fm.lm_head %out, %emb {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
    return %logits : tensor<?x128xf32>
  }
  func.func @decode(%tokens: tensor<?xi32>, %pos: index) -> tensor<?x128xf32> attributes {fm.phase = "decode"} {
    %emb = fm.param "model.embedding.weight" : tensor<128x64xf32>
    %x0 = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
    %n0a = fm.param "model.layers.0.input_layernorm.weight" : tensor<64xf32>
    %h0n = fm.rms_norm %x0, %n0a {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %qkv0 = fm.param "model.layers.0.self_attn.qkv_proj.weight" : tensor<128x64xf32>
    %o0 = fm.param "model.layers.0.self_attn.out_proj.weight" : tensor<64x64xf32>
    %qn0 = fm.param "model.layers.0.self_attn.q_norm.weight" : tensor<16xf32>
    %kn0 = fm.param "model.layers.0.self_attn.k_norm.weight" : tensor<16xf32>
    %ks0 = fm.param "model.layers.0.self_attn.quant_key_scale" : tensor<f32>
    %vs0 = fm.param "model.layers.0.self_attn.quant_value_scale" : tensor<f32>
    %a0 = fm.attention %h0n at %pos qkv(%qkv0 : tensor<128x64xf32>) o(%o0 : tensor<64x64xf32>) q_norm(%qn0 : tensor<16xf32>) k_norm(%kn0 : tensor<16xf32>) k_scale(%ks0 : tensor<f32>) v_scale(%vs0 : tensor<f32>) cache @kv [0] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, qk_norm_eps = 1.000000e-05 : f64, rope = #fm<rope interleaved>, rope_theta = 5.000000e+05 : f64, scale = 2.500000e-01 : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %r0 = fm.add %x0, %a0 : tensor<?x64xf32>
    %n0b = fm.param "model.layers.0.post_attention_layernorm.weight" : tensor<64xf32>
    %m0n = fm.rms_norm %r0, %n0b {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %gate0 = fm.param "model.layers.0.mlp.gate_proj.weight" : tensor<208x64xf32>
    %up0 = fm.param "model.layers.0.mlp.up_proj.weight" : tensor<208x64xf32>
    %down0 = fm.param "model.layers.0.mlp.down_proj.weight" : tensor<64x208xf32>
    %f0 = fm.mlp %m0n gate(%gate0 : tensor<208x64xf32>) up(%up0 : tensor<208x64xf32>) down(%down0 : tensor<64x208xf32>) {activation = #fm<activation swiglu>, layer = 0 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %y0 = fm.add %r0, %f0 : tensor<?x64xf32>
    %n1a = fm.param "model.layers.1.input_layernorm.weight" : tensor<64xf32>
    %h1n = fm.rms_norm %y0, %n1a {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %qkv1 = fm.param "model.layers.1.self_attn.qkv_proj.weight" : tensor<128x64xf32>
    %o1 = fm.param "model.layers.1.self_attn.out_proj.weight" : tensor<64x64xf32>
    %qn1 = fm.param "model.layers.1.self_attn.q_norm.weight" : tensor<16xf32>
    %kn1 = fm.param "model.layers.1.self_attn.k_norm.weight" : tensor<16xf32>
    %ks1 = fm.param "model.layers.1.self_attn.quant_key_scale" : tensor<f32>
    %vs1 = fm.param "model.layers.1.self_attn.quant_value_scale" : tensor<f32>
    %a1 = fm.attention %h1n at %pos qkv(%qkv1 : tensor<128x64xf32>) o(%o1 : tensor<64x64xf32>) q_norm(%qn1 : tensor<16xf32>) k_norm(%kn1 : tensor<16xf32>) k_scale(%ks1 : tensor<f32>) v_scale(%vs1 : tensor<f32>) cache @kv [1] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, qk_norm_eps = 1.000000e-05 : f64, rope = #fm<rope interleaved>, rope_theta = 5.000000e+05 : f64, scale = 2.500000e-01 : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %r1 = fm.add %y0, %a1 : tensor<?x64xf32>
    %n1b = fm.param "model.layers.1.post_attention_layernorm.weight" : tensor<64xf32>
    %m1n = fm.rms_norm %r1, %n1b {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %gate1 = fm.param "model.layers.1.mlp.gate_proj.weight" : tensor<208x64xf32>
    %up1 = fm.param "model.layers.1.mlp.up_proj.weight" : tensor<208x64xf32>
    %down1 = fm.param "model.layers.1.mlp.down_proj.weight" : tensor<64x208xf32>
    %f1 = fm.mlp %m1n gate(%gate1 : tensor<208x64xf32>) up(%up1 : tensor<208x64xf32>) down(%down1 : tensor<64x208xf32>) {activation = #fm<activation swiglu>, layer = 1 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %y1 = fm.add %r1, %f1 : tensor<?x64xf32>
    %n2a = fm.param "model.kv_reuse_layers.0.input_layernorm.weight" : tensor<64xf32>
    %h2n = fm.rms_norm %y1, %n2a {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %q2 = fm.param "model.kv_reuse_layers.0.self_attn.q_proj.weight" : tensor<64x64xf32>
    %o2 = fm.param "model.kv_reuse_layers.0.self_attn.out_proj.weight" : tensor<64x64xf32>
    %qn2 = fm.param "model.kv_reuse_layers.0.self_attn.q_norm.weight" : tensor<16xf32>
    %a2 = fm.attention %h2n at %pos q(%q2 : tensor<64x64xf32>) o(%o2 : tensor<64x64xf32>) q_norm(%qn2 : tensor<16xf32>) reuse cache @kv [1] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, qk_norm_eps = 1.000000e-05 : f64, rope = #fm<rope interleaved>, rope_theta = 5.000000e+05 : f64, scale = 2.500000e-01 : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %r2 = fm.add %y1, %a2 : tensor<?x64xf32>
    %n2b = fm.param "model.kv_reuse_layers.0.post_attention_layernorm.weight" : tensor<64xf32>
    %m2n = fm.rms_norm %r2, %n2b {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %gate2 = fm.param "model.kv_reuse_layers.0.mlp.gate_proj.weight" : tensor<208x64xf32>
    %up2 = fm.param "model.kv_reuse_layers.0.mlp.up_proj.weight" : tensor<208x64xf32>
    %down2 = fm.param "model.kv_reuse_layers.0.mlp.down_proj.weight" : tensor<64x208xf32>
    %f2 = fm.mlp %m2n gate(%gate2 : tensor<208x64xf32>) up(%up2 : tensor<208x64xf32>) down(%down2 : tensor<64x208xf32>) {activation = #fm<activation swiglu>, layer = 2 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
    %y2 = fm.add %r2, %f2 : tensor<?x64xf32>
    %fn = fm.param "model.output_norm.weight" : tensor<64xf32>
    %out = fm.rms_norm %y2, %fn {eps = 1.000000e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %logits = fm.lm_head %out, %emb {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
    return %logits : tensor<?x128xf32>
  }
}
