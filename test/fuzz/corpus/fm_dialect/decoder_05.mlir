// Per-head q/k RMSNorms with their eps, plain multi-head attention (4 over 4).
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
