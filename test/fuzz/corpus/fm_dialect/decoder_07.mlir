// NoPE: rope none and no rope_theta; an odd head_dim is fine without RoPE.
fm.model @attn_nope attributes {family = "pt_moe", vocab_size = 128 : i64, hidden_size = 18 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(9) capacity(64) : f32
  func.func @prefill(%x: tensor<?x18xf32>, %pos: index) -> tensor<?x18xf32> attributes {fm.phase = "prefill"} {
    %q = fm.param "q" : tensor<18x18xf32>
    %k = fm.param "k" : tensor<9x18xf32>
    %v = fm.param "v" : tensor<9x18xf32>
    %o = fm.param "o" : tensor<18x18xf32>
    %a = fm.attention %x at %pos q(%q : tensor<18x18xf32>) k(%k : tensor<9x18xf32>) v(%v : tensor<9x18xf32>) o(%o : tensor<18x18xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 9 : i64, scale = 0.33 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x18xf32> -> tensor<?x18xf32>
    return %a : tensor<?x18xf32>
  }
}
