fm.model @m attributes {family = "llama", hidden_size = 18 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(9) capacity(64) : f32
  func.func @prefill(%x: tensor<?x18xf32>, %pos: index, %qkv: tensor<36x18xf32>, %o: tensor<18x18xf32>) -> tensor<?x18xf32> attributes {fm.phase = "prefill"} {
    %a = fm.attention %x at %pos qkv(%qkv : tensor<36x18xf32>) o(%o : tensor<18x18xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 9 : i64, scale = 0.33 : f64, rope = #fm<rope half>, rope_theta = 1.0e+04 : f64, kind = #fm<attention global>} : tensor<?x18xf32> -> tensor<?x18xf32>
    return %a : tensor<?x18xf32>
  }
}
