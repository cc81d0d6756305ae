// ODS constraints: the generic form must size the operand groups.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %a = "fm.attention"(%x, %pos, %q, %k, %v, %o) <{cache = @kv, cache_slot = 0 : i64, head_dim = 16 : i64, kind = #fm<attention global>, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #fm<rope none>, scale = 2.500000e-01 : f64}> : (tensor<?x64xf32>, index, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}
