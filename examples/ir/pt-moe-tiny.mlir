// A tiny parallel-track MoE model written by hand: 2 track blocks of depth 2,
// 2 tracks each with their own KV cache, local (window 4, RoPE) and global
// (NoPE) attention alternating, and a top-2-of-4 MoE on every second layer.
// CHECK-LABEL: fm.model @pt_moe_tiny
// CHECK-COUNT-2: fm.track_block
// CHECK: fm.moe
fm.model @pt_moe_tiny attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 100 : i64} {
  fm.kv_cache @kv_t0 layers(4) kv_heads(1) head_dim(16) capacity(128) : f32
  fm.kv_cache @kv_t1 layers(4) kv_heads(1) head_dim(16) capacity(128) : f32
  func.func @prefill(%tokens: tensor<?xi32>, %pos: index) -> tensor<?x100xf32> attributes {fm.phase = "prefill"} {
    %emb = fm.param "model.embed_tokens.weight" : tensor<100x32xf32>
    %x0 = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<100x32xf32> -> tensor<?x32xf32>
    %x1 = fm.track_block %x0 {block = 0 : i64, combine = #fm<combine mean>, depth = 2 : i64} : tensor<?x32xf32>
      track (%in_0_0: tensor<?x32xf32>) {
        %an0_0_0 = fm.param "model.blocks.0.tracks.0.layers.0.input_layernorm.weight" : tensor<32xf32>
        %n0_0_0 = fm.rms_norm %in_0_0, %an0_0_0 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %q0_0_0 = fm.param "model.blocks.0.tracks.0.layers.0.self_attn.q_proj.weight" : tensor<32x32xf32>
        %k0_0_0 = fm.param "model.blocks.0.tracks.0.layers.0.self_attn.k_proj.weight" : tensor<16x32xf32>
        %v0_0_0 = fm.param "model.blocks.0.tracks.0.layers.0.self_attn.v_proj.weight" : tensor<16x32xf32>
        %o0_0_0 = fm.param "model.blocks.0.tracks.0.layers.0.self_attn.o_proj.weight" : tensor<32x32xf32>
        %a0_0_0 = fm.attention %n0_0_0 at %pos q(%q0_0_0 : tensor<32x32xf32>) k(%k0_0_0 : tensor<16x32xf32>) v(%v0_0_0 : tensor<16x32xf32>) o(%o0_0_0 : tensor<32x32xf32>) cache @kv_t0 [0] {head_dim = 16 : i64, kind = #fm<attention local>, window = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope half>, rope_theta = 1.000000e+04 : f64, scale = 2.500000e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %h0_0_0 = fm.add %in_0_0, %a0_0_0 : tensor<?x32xf32>
        %fn0_0_0 = fm.param "model.blocks.0.tracks.0.layers.0.post_attention_layernorm.weight" : tensor<32xf32>
        %m0_0_0 = fm.rms_norm %h0_0_0, %fn0_0_0 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %gate0_0_0 = fm.param "model.blocks.0.tracks.0.layers.0.mlp.gate_proj.weight" : tensor<48x32xf32>
        %up0_0_0 = fm.param "model.blocks.0.tracks.0.layers.0.mlp.up_proj.weight" : tensor<48x32xf32>
        %down0_0_0 = fm.param "model.blocks.0.tracks.0.layers.0.mlp.down_proj.weight" : tensor<32x48xf32>
        %f0_0_0 = fm.mlp %m0_0_0 gate(%gate0_0_0 : tensor<48x32xf32>) up(%up0_0_0 : tensor<48x32xf32>) down(%down0_0_0 : tensor<32x48xf32>) {activation = #fm<activation swiglu>, layer = 0 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %y0_0_0 = fm.add %h0_0_0, %f0_0_0 : tensor<?x32xf32>
        %an0_0_1 = fm.param "model.blocks.0.tracks.0.layers.1.input_layernorm.weight" : tensor<32xf32>
        %n0_0_1 = fm.rms_norm %y0_0_0, %an0_0_1 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %q0_0_1 = fm.param "model.blocks.0.tracks.0.layers.1.self_attn.q_proj.weight" : tensor<32x32xf32>
        %k0_0_1 = fm.param "model.blocks.0.tracks.0.layers.1.self_attn.k_proj.weight" : tensor<16x32xf32>
        %v0_0_1 = fm.param "model.blocks.0.tracks.0.layers.1.self_attn.v_proj.weight" : tensor<16x32xf32>
        %o0_0_1 = fm.param "model.blocks.0.tracks.0.layers.1.self_attn.o_proj.weight" : tensor<32x32xf32>
        %a0_0_1 = fm.attention %n0_0_1 at %pos q(%q0_0_1 : tensor<32x32xf32>) k(%k0_0_1 : tensor<16x32xf32>) v(%v0_0_1 : tensor<16x32xf32>) o(%o0_0_1 : tensor<32x32xf32>) cache @kv_t0 [1] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope none>, scale = 2.500000e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %h0_0_1 = fm.add %y0_0_0, %a0_0_1 : tensor<?x32xf32>
        %fn0_0_1 = fm.param "model.blocks.0.tracks.0.layers.1.post_attention_layernorm.weight" : tensor<32xf32>
        %m0_0_1 = fm.rms_norm %h0_0_1, %fn0_0_1 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %rt0_0_1 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.router.weight" : tensor<4x32xf32>
        %gate0_0_1_0 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.0.gate_proj.weight" : tensor<24x32xf32>
        %up0_0_1_0 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.0.up_proj.weight" : tensor<24x32xf32>
        %down0_0_1_0 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.0.down_proj.weight" : tensor<32x24xf32>
        %gate0_0_1_1 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.1.gate_proj.weight" : tensor<24x32xf32>
        %up0_0_1_1 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.1.up_proj.weight" : tensor<24x32xf32>
        %down0_0_1_1 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.1.down_proj.weight" : tensor<32x24xf32>
        %gate0_0_1_2 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.2.gate_proj.weight" : tensor<24x32xf32>
        %up0_0_1_2 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.2.up_proj.weight" : tensor<24x32xf32>
        %down0_0_1_2 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.2.down_proj.weight" : tensor<32x24xf32>
        %gate0_0_1_3 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.3.gate_proj.weight" : tensor<24x32xf32>
        %up0_0_1_3 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.3.up_proj.weight" : tensor<24x32xf32>
        %down0_0_1_3 = fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.3.down_proj.weight" : tensor<32x24xf32>
        %f0_0_1 = fm.moe %m0_0_1 router(%rt0_0_1 : tensor<4x32xf32>) gate(%gate0_0_1_0, %gate0_0_1_1, %gate0_0_1_2, %gate0_0_1_3 : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) up(%up0_0_1_0, %up0_0_1_1, %up0_0_1_2, %up0_0_1_3 : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) down(%down0_0_1_0, %down0_0_1_1, %down0_0_1_2, %down0_0_1_3 : tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>) {layer = 1 : i64, norm_topk_prob, num_experts = 4 : i64, top_k = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %y0_0_1 = fm.add %h0_0_1, %f0_0_1 : tensor<?x32xf32>
        fm.yield %y0_0_1 : tensor<?x32xf32>
      }
      track (%in_0_1: tensor<?x32xf32>) {
        %an0_1_0 = fm.param "model.blocks.0.tracks.1.layers.0.input_layernorm.weight" : tensor<32xf32>
        %n0_1_0 = fm.rms_norm %in_0_1, %an0_1_0 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %q0_1_0 = fm.param "model.blocks.0.tracks.1.layers.0.self_attn.q_proj.weight" : tensor<32x32xf32>
        %k0_1_0 = fm.param "model.blocks.0.tracks.1.layers.0.self_attn.k_proj.weight" : tensor<16x32xf32>
        %v0_1_0 = fm.param "model.blocks.0.tracks.1.layers.0.self_attn.v_proj.weight" : tensor<16x32xf32>
        %o0_1_0 = fm.param "model.blocks.0.tracks.1.layers.0.self_attn.o_proj.weight" : tensor<32x32xf32>
        %a0_1_0 = fm.attention %n0_1_0 at %pos q(%q0_1_0 : tensor<32x32xf32>) k(%k0_1_0 : tensor<16x32xf32>) v(%v0_1_0 : tensor<16x32xf32>) o(%o0_1_0 : tensor<32x32xf32>) cache @kv_t1 [0] {head_dim = 16 : i64, kind = #fm<attention local>, window = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope half>, rope_theta = 1.000000e+04 : f64, scale = 2.500000e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %h0_1_0 = fm.add %in_0_1, %a0_1_0 : tensor<?x32xf32>
        %fn0_1_0 = fm.param "model.blocks.0.tracks.1.layers.0.post_attention_layernorm.weight" : tensor<32xf32>
        %m0_1_0 = fm.rms_norm %h0_1_0, %fn0_1_0 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %gate0_1_0 = fm.param "model.blocks.0.tracks.1.layers.0.mlp.gate_proj.weight" : tensor<48x32xf32>
        %up0_1_0 = fm.param "model.blocks.0.tracks.1.layers.0.mlp.up_proj.weight" : tensor<48x32xf32>
        %down0_1_0 = fm.param "model.blocks.0.tracks.1.layers.0.mlp.down_proj.weight" : tensor<32x48xf32>
        %f0_1_0 = fm.mlp %m0_1_0 gate(%gate0_1_0 : tensor<48x32xf32>) up(%up0_1_0 : tensor<48x32xf32>) down(%down0_1_0 : tensor<32x48xf32>) {activation = #fm<activation swiglu>, layer = 0 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %y0_1_0 = fm.add %h0_1_0, %f0_1_0 : tensor<?x32xf32>
        %an0_1_1 = fm.param "model.blocks.0.tracks.1.layers.1.input_layernorm.weight" : tensor<32xf32>
        %n0_1_1 = fm.rms_norm %y0_1_0, %an0_1_1 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %q0_1_1 = fm.param "model.blocks.0.tracks.1.layers.1.self_attn.q_proj.weight" : tensor<32x32xf32>
        %k0_1_1 = fm.param "model.blocks.0.tracks.1.layers.1.self_attn.k_proj.weight" : tensor<16x32xf32>
        %v0_1_1 = fm.param "model.blocks.0.tracks.1.layers.1.self_attn.v_proj.weight" : tensor<16x32xf32>
        %o0_1_1 = fm.param "model.blocks.0.tracks.1.layers.1.self_attn.o_proj.weight" : tensor<32x32xf32>
        %a0_1_1 = fm.attention %n0_1_1 at %pos q(%q0_1_1 : tensor<32x32xf32>) k(%k0_1_1 : tensor<16x32xf32>) v(%v0_1_1 : tensor<16x32xf32>) o(%o0_1_1 : tensor<32x32xf32>) cache @kv_t1 [1] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope none>, scale = 2.500000e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %h0_1_1 = fm.add %y0_1_0, %a0_1_1 : tensor<?x32xf32>
        %fn0_1_1 = fm.param "model.blocks.0.tracks.1.layers.1.post_attention_layernorm.weight" : tensor<32xf32>
        %m0_1_1 = fm.rms_norm %h0_1_1, %fn0_1_1 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %rt0_1_1 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.router.weight" : tensor<4x32xf32>
        %gate0_1_1_0 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.experts.0.gate_proj.weight" : tensor<24x32xf32>
        %up0_1_1_0 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.experts.0.up_proj.weight" : tensor<24x32xf32>
        %down0_1_1_0 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.experts.0.down_proj.weight" : tensor<32x24xf32>
        %gate0_1_1_1 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.experts.1.gate_proj.weight" : tensor<24x32xf32>
        %up0_1_1_1 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.experts.1.up_proj.weight" : tensor<24x32xf32>
        %down0_1_1_1 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.experts.1.down_proj.weight" : tensor<32x24xf32>
        %gate0_1_1_2 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.experts.2.gate_proj.weight" : tensor<24x32xf32>
        %up0_1_1_2 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.experts.2.up_proj.weight" : tensor<24x32xf32>
        %down0_1_1_2 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.experts.2.down_proj.weight" : tensor<32x24xf32>
        %gate0_1_1_3 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.experts.3.gate_proj.weight" : tensor<24x32xf32>
        %up0_1_1_3 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.experts.3.up_proj.weight" : tensor<24x32xf32>
        %down0_1_1_3 = fm.param "model.blocks.0.tracks.1.layers.1.mlp.experts.3.down_proj.weight" : tensor<32x24xf32>
        %f0_1_1 = fm.moe %m0_1_1 router(%rt0_1_1 : tensor<4x32xf32>) gate(%gate0_1_1_0, %gate0_1_1_1, %gate0_1_1_2, %gate0_1_1_3 : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) up(%up0_1_1_0, %up0_1_1_1, %up0_1_1_2, %up0_1_1_3 : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) down(%down0_1_1_0, %down0_1_1_1, %down0_1_1_2, %down0_1_1_3 : tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>) {layer = 1 : i64, norm_topk_prob, num_experts = 4 : i64, top_k = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %y0_1_1 = fm.add %h0_1_1, %f0_1_1 : tensor<?x32xf32>
        fm.yield %y0_1_1 : tensor<?x32xf32>
      }
    %x2 = fm.track_block %x1 {block = 1 : i64, combine = #fm<combine mean>, depth = 2 : i64} : tensor<?x32xf32>
      track (%in_1_0: tensor<?x32xf32>) {
        %an1_0_0 = fm.param "model.blocks.1.tracks.0.layers.0.input_layernorm.weight" : tensor<32xf32>
        %n1_0_0 = fm.rms_norm %in_1_0, %an1_0_0 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %q1_0_0 = fm.param "model.blocks.1.tracks.0.layers.0.self_attn.q_proj.weight" : tensor<32x32xf32>
        %k1_0_0 = fm.param "model.blocks.1.tracks.0.layers.0.self_attn.k_proj.weight" : tensor<16x32xf32>
        %v1_0_0 = fm.param "model.blocks.1.tracks.0.layers.0.self_attn.v_proj.weight" : tensor<16x32xf32>
        %o1_0_0 = fm.param "model.blocks.1.tracks.0.layers.0.self_attn.o_proj.weight" : tensor<32x32xf32>
        %a1_0_0 = fm.attention %n1_0_0 at %pos q(%q1_0_0 : tensor<32x32xf32>) k(%k1_0_0 : tensor<16x32xf32>) v(%v1_0_0 : tensor<16x32xf32>) o(%o1_0_0 : tensor<32x32xf32>) cache @kv_t0 [2] {head_dim = 16 : i64, kind = #fm<attention local>, window = 4 : i64, layer = 2 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope half>, rope_theta = 1.000000e+04 : f64, scale = 2.500000e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %h1_0_0 = fm.add %in_1_0, %a1_0_0 : tensor<?x32xf32>
        %fn1_0_0 = fm.param "model.blocks.1.tracks.0.layers.0.post_attention_layernorm.weight" : tensor<32xf32>
        %m1_0_0 = fm.rms_norm %h1_0_0, %fn1_0_0 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %gate1_0_0 = fm.param "model.blocks.1.tracks.0.layers.0.mlp.gate_proj.weight" : tensor<48x32xf32>
        %up1_0_0 = fm.param "model.blocks.1.tracks.0.layers.0.mlp.up_proj.weight" : tensor<48x32xf32>
        %down1_0_0 = fm.param "model.blocks.1.tracks.0.layers.0.mlp.down_proj.weight" : tensor<32x48xf32>
        %f1_0_0 = fm.mlp %m1_0_0 gate(%gate1_0_0 : tensor<48x32xf32>) up(%up1_0_0 : tensor<48x32xf32>) down(%down1_0_0 : tensor<32x48xf32>) {activation = #fm<activation swiglu>, layer = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %y1_0_0 = fm.add %h1_0_0, %f1_0_0 : tensor<?x32xf32>
        %an1_0_1 = fm.param "model.blocks.1.tracks.0.layers.1.input_layernorm.weight" : tensor<32xf32>
        %n1_0_1 = fm.rms_norm %y1_0_0, %an1_0_1 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %q1_0_1 = fm.param "model.blocks.1.tracks.0.layers.1.self_attn.q_proj.weight" : tensor<32x32xf32>
        %k1_0_1 = fm.param "model.blocks.1.tracks.0.layers.1.self_attn.k_proj.weight" : tensor<16x32xf32>
        %v1_0_1 = fm.param "model.blocks.1.tracks.0.layers.1.self_attn.v_proj.weight" : tensor<16x32xf32>
        %o1_0_1 = fm.param "model.blocks.1.tracks.0.layers.1.self_attn.o_proj.weight" : tensor<32x32xf32>
        %a1_0_1 = fm.attention %n1_0_1 at %pos q(%q1_0_1 : tensor<32x32xf32>) k(%k1_0_1 : tensor<16x32xf32>) v(%v1_0_1 : tensor<16x32xf32>) o(%o1_0_1 : tensor<32x32xf32>) cache @kv_t0 [3] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 3 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope none>, scale = 2.500000e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %h1_0_1 = fm.add %y1_0_0, %a1_0_1 : tensor<?x32xf32>
        %fn1_0_1 = fm.param "model.blocks.1.tracks.0.layers.1.post_attention_layernorm.weight" : tensor<32xf32>
        %m1_0_1 = fm.rms_norm %h1_0_1, %fn1_0_1 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %rt1_0_1 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.router.weight" : tensor<4x32xf32>
        %gate1_0_1_0 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.experts.0.gate_proj.weight" : tensor<24x32xf32>
        %up1_0_1_0 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.experts.0.up_proj.weight" : tensor<24x32xf32>
        %down1_0_1_0 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.experts.0.down_proj.weight" : tensor<32x24xf32>
        %gate1_0_1_1 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.experts.1.gate_proj.weight" : tensor<24x32xf32>
        %up1_0_1_1 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.experts.1.up_proj.weight" : tensor<24x32xf32>
        %down1_0_1_1 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.experts.1.down_proj.weight" : tensor<32x24xf32>
        %gate1_0_1_2 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.experts.2.gate_proj.weight" : tensor<24x32xf32>
        %up1_0_1_2 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.experts.2.up_proj.weight" : tensor<24x32xf32>
        %down1_0_1_2 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.experts.2.down_proj.weight" : tensor<32x24xf32>
        %gate1_0_1_3 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.experts.3.gate_proj.weight" : tensor<24x32xf32>
        %up1_0_1_3 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.experts.3.up_proj.weight" : tensor<24x32xf32>
        %down1_0_1_3 = fm.param "model.blocks.1.tracks.0.layers.1.mlp.experts.3.down_proj.weight" : tensor<32x24xf32>
        %f1_0_1 = fm.moe %m1_0_1 router(%rt1_0_1 : tensor<4x32xf32>) gate(%gate1_0_1_0, %gate1_0_1_1, %gate1_0_1_2, %gate1_0_1_3 : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) up(%up1_0_1_0, %up1_0_1_1, %up1_0_1_2, %up1_0_1_3 : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) down(%down1_0_1_0, %down1_0_1_1, %down1_0_1_2, %down1_0_1_3 : tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>) {layer = 3 : i64, norm_topk_prob, num_experts = 4 : i64, top_k = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %y1_0_1 = fm.add %h1_0_1, %f1_0_1 : tensor<?x32xf32>
        fm.yield %y1_0_1 : tensor<?x32xf32>
      }
      track (%in_1_1: tensor<?x32xf32>) {
        %an1_1_0 = fm.param "model.blocks.1.tracks.1.layers.0.input_layernorm.weight" : tensor<32xf32>
        %n1_1_0 = fm.rms_norm %in_1_1, %an1_1_0 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %q1_1_0 = fm.param "model.blocks.1.tracks.1.layers.0.self_attn.q_proj.weight" : tensor<32x32xf32>
        %k1_1_0 = fm.param "model.blocks.1.tracks.1.layers.0.self_attn.k_proj.weight" : tensor<16x32xf32>
        %v1_1_0 = fm.param "model.blocks.1.tracks.1.layers.0.self_attn.v_proj.weight" : tensor<16x32xf32>
        %o1_1_0 = fm.param "model.blocks.1.tracks.1.layers.0.self_attn.o_proj.weight" : tensor<32x32xf32>
        %a1_1_0 = fm.attention %n1_1_0 at %pos q(%q1_1_0 : tensor<32x32xf32>) k(%k1_1_0 : tensor<16x32xf32>) v(%v1_1_0 : tensor<16x32xf32>) o(%o1_1_0 : tensor<32x32xf32>) cache @kv_t1 [2] {head_dim = 16 : i64, kind = #fm<attention local>, window = 4 : i64, layer = 2 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope half>, rope_theta = 1.000000e+04 : f64, scale = 2.500000e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %h1_1_0 = fm.add %in_1_1, %a1_1_0 : tensor<?x32xf32>
        %fn1_1_0 = fm.param "model.blocks.1.tracks.1.layers.0.post_attention_layernorm.weight" : tensor<32xf32>
        %m1_1_0 = fm.rms_norm %h1_1_0, %fn1_1_0 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %gate1_1_0 = fm.param "model.blocks.1.tracks.1.layers.0.mlp.gate_proj.weight" : tensor<48x32xf32>
        %up1_1_0 = fm.param "model.blocks.1.tracks.1.layers.0.mlp.up_proj.weight" : tensor<48x32xf32>
        %down1_1_0 = fm.param "model.blocks.1.tracks.1.layers.0.mlp.down_proj.weight" : tensor<32x48xf32>
        %f1_1_0 = fm.mlp %m1_1_0 gate(%gate1_1_0 : tensor<48x32xf32>) up(%up1_1_0 : tensor<48x32xf32>) down(%down1_1_0 : tensor<32x48xf32>) {activation = #fm<activation swiglu>, layer = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %y1_1_0 = fm.add %h1_1_0, %f1_1_0 : tensor<?x32xf32>
        %an1_1_1 = fm.param "model.blocks.1.tracks.1.layers.1.input_layernorm.weight" : tensor<32xf32>
        %n1_1_1 = fm.rms_norm %y1_1_0, %an1_1_1 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %q1_1_1 = fm.param "model.blocks.1.tracks.1.layers.1.self_attn.q_proj.weight" : tensor<32x32xf32>
        %k1_1_1 = fm.param "model.blocks.1.tracks.1.layers.1.self_attn.k_proj.weight" : tensor<16x32xf32>
        %v1_1_1 = fm.param "model.blocks.1.tracks.1.layers.1.self_attn.v_proj.weight" : tensor<16x32xf32>
        %o1_1_1 = fm.param "model.blocks.1.tracks.1.layers.1.self_attn.o_proj.weight" : tensor<32x32xf32>
        %a1_1_1 = fm.attention %n1_1_1 at %pos q(%q1_1_1 : tensor<32x32xf32>) k(%k1_1_1 : tensor<16x32xf32>) v(%v1_1_1 : tensor<16x32xf32>) o(%o1_1_1 : tensor<32x32xf32>) cache @kv_t1 [3] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 3 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope none>, scale = 2.500000e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %h1_1_1 = fm.add %y1_1_0, %a1_1_1 : tensor<?x32xf32>
        %fn1_1_1 = fm.param "model.blocks.1.tracks.1.layers.1.post_attention_layernorm.weight" : tensor<32xf32>
        %m1_1_1 = fm.rms_norm %h1_1_1, %fn1_1_1 {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
        %rt1_1_1 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.router.weight" : tensor<4x32xf32>
        %gate1_1_1_0 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.experts.0.gate_proj.weight" : tensor<24x32xf32>
        %up1_1_1_0 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.experts.0.up_proj.weight" : tensor<24x32xf32>
        %down1_1_1_0 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.experts.0.down_proj.weight" : tensor<32x24xf32>
        %gate1_1_1_1 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.experts.1.gate_proj.weight" : tensor<24x32xf32>
        %up1_1_1_1 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.experts.1.up_proj.weight" : tensor<24x32xf32>
        %down1_1_1_1 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.experts.1.down_proj.weight" : tensor<32x24xf32>
        %gate1_1_1_2 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.experts.2.gate_proj.weight" : tensor<24x32xf32>
        %up1_1_1_2 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.experts.2.up_proj.weight" : tensor<24x32xf32>
        %down1_1_1_2 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.experts.2.down_proj.weight" : tensor<32x24xf32>
        %gate1_1_1_3 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.experts.3.gate_proj.weight" : tensor<24x32xf32>
        %up1_1_1_3 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.experts.3.up_proj.weight" : tensor<24x32xf32>
        %down1_1_1_3 = fm.param "model.blocks.1.tracks.1.layers.1.mlp.experts.3.down_proj.weight" : tensor<32x24xf32>
        %f1_1_1 = fm.moe %m1_1_1 router(%rt1_1_1 : tensor<4x32xf32>) gate(%gate1_1_1_0, %gate1_1_1_1, %gate1_1_1_2, %gate1_1_1_3 : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) up(%up1_1_1_0, %up1_1_1_1, %up1_1_1_2, %up1_1_1_3 : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) down(%down1_1_1_0, %down1_1_1_1, %down1_1_1_2, %down1_1_1_3 : tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>) {layer = 3 : i64, norm_topk_prob, num_experts = 4 : i64, top_k = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %y1_1_1 = fm.add %h1_1_1, %f1_1_1 : tensor<?x32xf32>
        fm.yield %y1_1_1 : tensor<?x32xf32>
      }
    %fnorm = fm.param "model.norm.weight" : tensor<32xf32>
    %out = fm.rms_norm %x2, %fnorm {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
    %head = fm.param "lm_head.weight" : tensor<100x32xf32>
    %logits = fm.lm_head %out, %head : tensor<?x32xf32>, tensor<100x32xf32> -> tensor<?x100xf32>
    return %logits : tensor<?x100xf32>
  }
}
