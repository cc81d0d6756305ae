// Four tracks reduced by sum, each with its own cache and an MoE layer after attention.
fm.model @four_tracks attributes {family = "pt_moe", vocab_size = 64 : i64, hidden_size = 32 : i64} {
  fm.kv_cache @kv_t0 layers(1) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(1) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t2 layers(1) kv_heads(1) head_dim(16) capacity(32) : f16
  fm.kv_cache @kv_t3 layers(1) kv_heads(1) head_dim(16) capacity(32) : bf16
  func.func @decode(%x: tensor<?x32xf32>, %pos: index) -> tensor<?x32xf32> attributes {fm.phase = "decode"} {
    %qkv = fm.param "qkv" : tensor<64x32xf32>
    %o = fm.param "o" : tensor<32x32xf32>
    %r = fm.param "router" : tensor<2x32xf32>
    %g = fm.param "g" : tensor<16x32xf32>
    %d = fm.param "d" : tensor<32x16xf32>
    %y = fm.track_block %x {block = 3 : i64, depth = 1 : i64, combine = #fm<combine sum>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        %m = fm.moe %a router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64, norm_topk_prob} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %m : tensor<?x32xf32>
      }
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t1 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        %m = fm.moe %a router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64, norm_topk_prob} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %m : tensor<?x32xf32>
      }
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t2 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        %m = fm.moe %a router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64, norm_topk_prob} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %m : tensor<?x32xf32>
      }
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t3 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        %m = fm.moe %a router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64, norm_topk_prob} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %m : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}
