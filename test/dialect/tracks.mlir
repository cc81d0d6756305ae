// Round trip of fm.track_block: 1, 2 and 4 tracks, mean and sum, attention and MoE inside tracks with one KV cache per track.
// RUN: fm-opt %s -split-input-file | fm-opt -split-input-file | FileCheck %s
// RUN: fm-opt %s -split-input-file > %t.1 && fm-opt %t.1 -split-input-file > %t.2 && diff %t.1 %t.2

// One track of depth 1: the block's only layer runs inside the track, and the block result is returned.
// CHECK-LABEL: fm.model @one_track
// CHECK: %[[Y:.*]] = fm.track_block %{{.*}} {block = 0 : i64, combine = #fm<combine sum>, depth = 1 : i64} : tensor<?x32xf32>
// CHECK-NEXT: track (%[[T:.*]]: tensor<?x32xf32>) {
// CHECK-NEXT: fm.attention %[[T]] at %{{.*}} qkv(%{{.*}} : tensor<64x32xf32>) o(%{{.*}} : tensor<32x32xf32>) cache @kv[0]
// CHECK-NEXT: fm.yield %{{.*}} : tensor<?x32xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[Y]]
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

// -----

// Two tracks of depth 2 reduced by mean; each track owns its cache, local then global attention, MLP in between.
// CHECK-LABEL: fm.model @two_tracks
// CHECK: fm.track_block %{{.*}} {block = 0 : i64, combine = #fm<combine mean>, depth = 2 : i64} : tensor<?x32xf32>
// CHECK-NEXT: track (%[[T0:.*]]: tensor<?x32xf32>) {
// CHECK:      fm.attention %{{.*}} cache @kv_t0[0] {{{.*}}kind = #fm<attention local>, layer = 0 : i64{{.*}}window = 4 : i64}
// CHECK:      fm.mlp
// CHECK:      fm.attention %{{.*}} cache @kv_t0[1] {{{.*}}kind = #fm<attention global>, layer = 1 : i64
// CHECK:      fm.yield
// CHECK-NEXT: }
// CHECK-NEXT: track (%[[T1:.*]]: tensor<?x32xf32>) {
// CHECK:      fm.attention %{{.*}} cache @kv_t1[0] {{{.*}}kind = #fm<attention local>, layer = 0 : i64
// CHECK:      fm.attention %{{.*}} cache @kv_t1[1] {{{.*}}layer = 1 : i64
// CHECK:      fm.yield
// CHECK-NEXT: }
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

// -----

// Four tracks reduced by sum, each with its own cache and an MoE layer after attention.
// CHECK-LABEL: fm.model @four_tracks
// CHECK: fm.track_block %{{.*}} {block = 3 : i64, combine = #fm<combine sum>, depth = 1 : i64} : tensor<?x32xf32>
// CHECK-NEXT: track (%{{.*}}: tensor<?x32xf32>) {
// CHECK:      cache @kv_t0[0]
// CHECK:      fm.moe {{.*}} {layer = 0 : i64, norm_topk_prob, num_experts = 2 : i64, top_k = 1 : i64}
// CHECK:      track (%{{.*}}: tensor<?x32xf32>) {
// CHECK:      cache @kv_t1[0]
// CHECK:      fm.moe
// CHECK:      track (%{{.*}}: tensor<?x32xf32>) {
// CHECK:      cache @kv_t2[0]
// CHECK:      fm.moe
// CHECK:      track (%{{.*}}: tensor<?x32xf32>) {
// CHECK:      cache @kv_t3[0]
// CHECK:      fm.moe
// CHECK:      fm.yield
// CHECK-NEXT: }
// CHECK-NEXT: return
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

// -----

// Two blocks in sequence: each track keeps its cache across blocks (block 1 writes the next slots), and
// inside a track a later layer may reuse the slot of an earlier layer of the same track.
// CHECK-LABEL: fm.model @two_blocks
// CHECK: fm.track_block %{{.*}} {block = 0 : i64, combine = #fm<combine mean>, depth = 1 : i64}
// CHECK: cache @kv_t0[0]
// CHECK: cache @kv_t1[0]
// CHECK: fm.track_block %{{.*}} {block = 1 : i64, combine = #fm<combine mean>, depth = 2 : i64}
// CHECK: cache @kv_t0[1]
// CHECK: reuse cache @kv_t0[1] {{{.*}}layer = 2 : i64
// CHECK: cache @kv_t1[1]
// CHECK: reuse cache @kv_t1[1] {{{.*}}layer = 2 : i64
fm.model @two_blocks attributes {family = "pt_moe", vocab_size = 64 : i64, hidden_size = 32 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %qkv = fm.param "qkv" : tensor<64x32xf32>
    %q = fm.param "q" : tensor<32x32xf32>
    %o = fm.param "o" : tensor<32x32xf32>
    %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t1 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
    %z = fm.track_block %y {block = 1 : i64, depth = 2 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [1] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        %b = fm.attention %a at %pos q(%q : tensor<32x32xf32>) o(%o : tensor<32x32xf32>) reuse cache @kv_t0 [1] {layer = 2 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %b : tensor<?x32xf32>
      }
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t1 [1] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        %b = fm.attention %a at %pos q(%q : tensor<32x32xf32>) o(%o : tensor<32x32xf32>) reuse cache @kv_t1 [1] {layer = 2 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %b : tensor<?x32xf32>
      }
    return %z : tensor<?x32xf32>
  }
}

// -----

// Static shapes through a block; a layer after the block may reuse a slot that a track wrote.
// CHECK-LABEL: fm.model @static_block
// CHECK: fm.track_block %{{.*}} {block = 0 : i64, combine = #fm<combine sum>, depth = 1 : i64} : tensor<4x32xf32>
// CHECK-NEXT: track (%{{.*}}: tensor<4x32xf32>) {
// CHECK: fm.yield %{{.*}} : tensor<4x32xf32>
// CHECK: fm.attention {{.*}} reuse cache @kv[0] {{{.*}}layer = 1 : i64
fm.model @static_block attributes {family = "pt_moe", vocab_size = 64 : i64, hidden_size = 32 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<4x32xf32>, %pos: index) -> tensor<4x32xf32> attributes {fm.phase = "prefill"} {
    %qkv = fm.param "qkv" : tensor<64x32xf32>
    %q = fm.param "q" : tensor<32x32xf32>
    %o = fm.param "o" : tensor<32x32xf32>
    %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine sum>} : tensor<4x32xf32>
      track (%t: tensor<4x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<4x32xf32> -> tensor<4x32xf32>
        fm.yield %a : tensor<4x32xf32>
      }
    %z = fm.attention %y at %pos q(%q : tensor<32x32xf32>) o(%o : tensor<32x32xf32>) reuse cache @kv [0] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<4x32xf32> -> tensor<4x32xf32>
    return %z : tensor<4x32xf32>
  }
}

// -----

// A layer inside a track may reuse a slot written before the block, at function level.
// (Writer and reader sit in different blocks here and in @static_block: ModelOp::verifyRegions calls
// Operation::isBeforeInBlock on them, which asserts in an assertions-enabled MLIR build; see the bug list.)
// CHECK-LABEL: fm.model @reuse_into_track
// CHECK: fm.attention {{.*}} cache @kv[0] {{{.*}}layer = 0 : i64
// CHECK: fm.track_block
// CHECK-NEXT: track
// CHECK-NEXT: fm.attention {{.*}} reuse cache @kv[0] {{{.*}}layer = 1 : i64
fm.model @reuse_into_track attributes {family = "pt_moe", vocab_size = 64 : i64, hidden_size = 32 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %qkv = fm.param "qkv" : tensor<64x32xf32>
    %q = fm.param "q" : tensor<32x32xf32>
    %o = fm.param "o" : tensor<32x32xf32>
    %a = fm.attention %x at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
    %y = fm.track_block %a {block = 0 : i64, depth = 1 : i64, combine = #fm<combine sum>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %b = fm.attention %t at %pos q(%q : tensor<32x32xf32>) o(%o : tensor<32x32xf32>) reuse cache @kv [0] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %b : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}
