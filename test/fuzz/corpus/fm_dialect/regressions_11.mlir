// Bug 3 (rule does not fire): ModelOp::verifyRegions only orders writer and reader when they share a block. A layer
// that reuses a slot which a track of a LATER block writes is accepted (the reader's region is an ancestor of the
// writer's, so neither the "comes after it" nor the "another track" rule fires).
fm.model @m attributes {family = "pt_moe", vocab_size = 64 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %qkv: tensor<128x64xf32>, %o: tensor<64x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %a0 = fm.attention %x at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) reuse cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    %y = fm.track_block %a0 {block = 0 : i64, depth = 1 : i64, combine = #fm<combine sum>} : tensor<?x64xf32>
      track (%t: tensor<?x64xf32>) {
        %a1 = fm.attention %t at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
        fm.yield %a1 : tensor<?x64xf32>
      }
    return %y : tensor<?x64xf32>
  }
}
