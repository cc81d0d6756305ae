// Round trip of fm.track_block: 1, 2 and 4 tracks, mean and sum, attention and MoE inside tracks with one KV cache per track.

// One track of depth 1: the block's only layer runs inside the track, and the block result is returned.
fm.model @one_track attributes {family = "pt_moe", vocab_size = 64 : i64, hidden_size = 32 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %qkv = fm.param "qkv" : tensor<64x32xf32>
    %o = fm.param "o" : tensor<32x32xf32>
    %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine sum>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}
