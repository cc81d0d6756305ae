// An MoE layer in a decoder model between attention and the residual add, with static tokens and mixed dtypes.
fm.model @mixtral_tiny attributes {family = "mixtral", vocab_size = 64 : i64, hidden_size = 32 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<8x32xf32>, %pos: index) -> tensor<8x32xf32> attributes {fm.phase = "prefill"} {
    %qkv = fm.param "qkv" : tensor<64x32xf32>
    %o = fm.param "o" : tensor<32x32xf32>
    %a = fm.attention %x at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope half>, rope_theta = 1.0e+06 : f64, kind = #fm<attention global>} : tensor<8x32xf32> -> tensor<8x32xf32>
    %r = fm.param "router" : tensor<2x32xbf16>
    %g = fm.param "g" : tensor<16x32xbf16>
    %u = fm.param "u" : tensor<16x32xf16>
    %d = fm.param "d" : tensor<32x16xbf16>
    %m = fm.moe %a router(%r : tensor<2x32xbf16>) gate(%g, %g : tensor<16x32xbf16>, tensor<16x32xbf16>) up(%u, %u : tensor<16x32xf16>, tensor<16x32xf16>) down(%d, %d : tensor<32x16xbf16>, tensor<32x16xbf16>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64, norm_topk_prob} : tensor<8x32xf32> -> tensor<8x32xf32>
    %y = fm.add %a, %m : tensor<8x32xf32>
    return %y : tensor<8x32xf32>
  }
}
