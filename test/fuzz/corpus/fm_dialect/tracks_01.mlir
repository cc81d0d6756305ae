// Two tracks of depth 2 reduced by mean; each track owns its cache, local then global attention, MLP in between.
fm.model @two_tracks attributes {family = "pt_moe", vocab_size = 64 : i64, hidden_size = 32 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %qkv = fm.param "qkv" : tensor<64x32xf32>
    %o = fm.param "o" : tensor<32x32xf32>
    %g = fm.param "g" : tensor<48x32xf32>
    %d = fm.param "d" : tensor<32x48xf32>
    %y = fm.track_block %x {block = 0 : i64, depth = 2 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t0: tensor<?x32xf32>) {
        %a0 = fm.attention %t0 at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope half>, rope_theta = 1.0e+04 : f64, kind = #fm<attention local>, window = 4 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %h0 = fm.add %t0, %a0 : tensor<?x32xf32>
        %f0 = fm.mlp %h0 gate(%g : tensor<48x32xf32>) up(%g : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 0 : i64, activation = #fm<activation swiglu>} : tensor<?x32xf32> -> tensor<?x32xf32>
        %a1 = fm.attention %f0 at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [1] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a1 : tensor<?x32xf32>
      }
      track (%t1: tensor<?x32xf32>) {
        %a0 = fm.attention %t1 at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t1 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope half>, rope_theta = 1.0e+04 : f64, kind = #fm<attention local>, window = 4 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
        %a1 = fm.attention %a0 at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t1 [1] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a1 : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}
