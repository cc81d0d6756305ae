// Separate q/k/v projections, GQA (4 query heads over 2 KV heads), HF RoPE, global.
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
