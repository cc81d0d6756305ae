// KV plan inside a track: one writer per slot ...
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %y = fm.track_block %x {block = 0 : i64, depth = 2 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        %b = fm.attention %a at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %b : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}
