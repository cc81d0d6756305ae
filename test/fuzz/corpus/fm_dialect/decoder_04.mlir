// Q/K/V biases (qwen2), MQA: 4 query heads over 1 KV head.
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
