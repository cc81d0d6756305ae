// Local (sliding-window) attention next to global attention, each owning a slot.
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
