// Fused qkv projection ((4 + 2*2) * 16 = 128 rows), interleaved RoPE, bf16 weights.
fm.model @attn_qkv_fused attributes {family = "afm7", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(2) head_dim(16) capacity(64) : bf16
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %qkv = fm.param "model.layers.0.self_attn.qkv_proj.weight" : tensor<128x64xbf16>
    %o = fm.param "model.layers.0.self_attn.out_proj.weight" : tensor<64x64xbf16>
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xbf16>) o(%o : tensor<64x64xbf16>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope interleaved>, rope_theta = 5.0e+05 : f64, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}
