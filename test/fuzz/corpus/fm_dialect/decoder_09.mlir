// KV sharing: layer 2 reuses the slot of layer 1; it has only q (and a q_norm), no K/V.
// Reuse of an int8 cache needs no scales.
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
