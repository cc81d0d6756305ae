fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %ks = fm.param "ks" : tensor<f32>
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) k_scale(%ks : tensor<f32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}
