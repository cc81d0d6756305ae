// K/V scales fake-quantize into an int8 cache.
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
