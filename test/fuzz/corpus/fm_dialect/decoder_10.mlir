// The same slots are written once per phase: prefill and decode each write slot 0.
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
