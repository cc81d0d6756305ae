// Diagnostics of fm.track_block (tracks, depth, track arguments and yields, one KV cache per track), of fm.yield, and of layers inside tracks (their messages name the track; the KV plan across tracks).
// RUN: fm-opt %s -split-input-file -verify-diagnostics

func.func @no_tracks(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.track_block' op track block 0 has no tracks}}
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @depth_zero(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.track_block' op track block 2: depth must be positive}}
  %y = fm.track_block %x {block = 2 : i64, depth = 0 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>) {
      fm.yield %t : tensor<?x32xf32>
    }
  return %y : tensor<?x32xf32>
}

// -----

// The result has the input's type (generic form: the custom syntax has one type).
func.func @result_type(%x: tensor<?x32xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'fm.track_block' op track block 0: result type 'tensor<4x32xf32>' differs from the input type 'tensor<?x32xf32>'}}
  %y = "fm.track_block"(%x) <{block = 0 : i64, depth = 1 : i64, combine = #fm<combine sum>}> ({
  ^bb0(%t: tensor<?x32xf32>):
    "fm.yield"(%t) : (tensor<?x32xf32>) -> ()
  }) : (tensor<?x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Each track takes exactly the block input as its one argument.
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.track_block' op track 1 of block 0 must take the block input ('tensor<?x32xf32>') as its one argument}}
    %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
      track () {
        fm.yield %x : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}

// -----

func.func @track_two_arguments(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.track_block' op track 0 of block 0 must take the block input ('tensor<?x32xf32>') as its one argument}}
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>, %u: tensor<?x32xf32>) {
      fm.yield %t : tensor<?x32xf32>
    }
  return %y : tensor<?x32xf32>
}

// -----

func.func @track_argument_type(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'fm.track_block' op track 0 of block 3 must take the block input ('tensor<8x32xf32>') as its one argument}}
  %y = fm.track_block %x {block = 3 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<8x32xf32>
    track (%t: tensor<?x32xf32>) {
      fm.yield %x : tensor<8x32xf32>
    }
  return %y : tensor<8x32xf32>
}

// -----

// A track ends with fm.yield.
func.func @track_without_yield(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.track_block' op track 0 of block 0 must end with fm.yield}}
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine sum>} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>) {
      %z = fm.add %t, %t : tensor<?x32xf32>
    }
  return %y : tensor<?x32xf32>
}

// -----

// Every track yields the block's type: the message names the track.
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>, %narrow: tensor<?x16xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.track_block' op track 1 of block 0 yields 'tensor<?x16xf32>', but the block's result is 'tensor<?x32xf32>'}}
    %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t1 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %narrow : tensor<?x16xf32>
      }
    return %y : tensor<?x32xf32>
  }
}

// -----

// Each track has depth layers (attention layers are counted).
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.track_block' op track 1 of block 0 has 1 layer, but the block has depth 2}}
    %y = fm.track_block %x {block = 0 : i64, depth = 2 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        %b = fm.attention %a at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [1] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %b : tensor<?x32xf32>
      }
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t1 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}

// -----

// Tracks are independent: each owns its KV cache.
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.track_block' op tracks 0 and 1 of block 0 share the KV cache @kv_t0, but tracks must be independent}}
    %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [1] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}

// -----

// ... even for a layer that only reads (reuse) another track's cache.
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.track_block' op tracks 0 and 1 of block 0 share the KV cache @kv_t0, but tracks must be independent}}
    %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos q(%q : tensor<32x32xf32>) o(%o : tensor<32x32xf32>) reuse cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}

// -----

// Messages of a layer inside a track name the track: attention ...
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 3 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
      track (%t: tensor<?x32xf32>) {
        // expected-error @+1 {{'fm.attention' op track 1 of block 0, layer 3: 8 query heads cannot be grouped over 3 KV heads}}
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t1 [0] {layer = 3 : i64, num_heads = 8 : i64, num_kv_heads = 3 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}

// -----

// ... the MLP ...
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %y = fm.track_block %x {block = 2 : i64, depth = 1 : i64, combine = #fm<combine sum>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 5 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        // expected-error @+1 {{'fm.mlp' op track 0 of block 2, layer 5: a GELU MLP has no gate projection}}
        %f = fm.mlp %a gate(%u : tensor<48x32xf32>) up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 5 : i64, activation = #fm<activation gelu>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %f : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}

// -----

// ... and the MoE.
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %y = fm.track_block %x {block = 1 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t1 [0] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        // expected-error @+1 {{'fm.moe' op track 1 of block 1, layer 1: top-k 3 exceeds the 2 experts}}
        %m = fm.moe %a router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 1 : i64, num_experts = 2 : i64, top_k = 3 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %m : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}

// -----

// KV plan inside a track: one writer per slot ...
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %y = fm.track_block %x {block = 0 : i64, depth = 2 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        // expected-error @+1 {{'fm.attention' op track 0 of block 0, layer 1 writes slot 0 of @kv_t0, which track 0 of block 0, layer 0 already writes}}
        %b = fm.attention %a at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %b : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}

// -----

// ... a reused slot is written earlier in the track ...
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %y = fm.track_block %x {block = 0 : i64, depth = 2 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        // expected-error @+1 {{'fm.attention' op track 0 of block 0, layer 0 reuses the KV cache of track 0 of block 0, layer 1, which comes after it}}
        %a = fm.attention %t at %pos q(%q : tensor<32x32xf32>) o(%o : tensor<32x32xf32>) reuse cache @kv_t0 [1] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        %b = fm.attention %a at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [1] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %b : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}

// -----

// ... and never across track regions: a layer in block 1 cannot read a slot that a track of block 0 wrote.
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %y0 = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
    %y = fm.track_block %y0 {block = 1 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
      track (%t: tensor<?x32xf32>) {
        // expected-error @+1 {{'fm.attention' op track 0 of block 1, layer 1 reuses the KV cache of track 0 of block 0, layer 0, which runs in another track}}
        %a = fm.attention %t at %pos q(%q : tensor<32x32xf32>) o(%o : tensor<32x32xf32>) reuse cache @kv_t0 [0] {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
        fm.yield %a : tensor<?x32xf32>
      }
    return %y : tensor<?x32xf32>
  }
}

// -----

// fm.yield only ends a track.
func.func @yield_outside(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.yield' op expects parent op 'fm.track_block'}}
  fm.yield %x : tensor<?x32xf32>
}

// -----

// fm.yield is the terminator of its track.
fm.model @pt attributes {family = "pt_moe", hidden_size = 32 : i64, vocab_size = 64 : i64} {
  fm.kv_cache @kv_t0 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  fm.kv_cache @kv_t1 layers(2) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<?x32xf32>, %pos: index, %qkv: tensor<64x32xf32>, %q: tensor<32x32xf32>, %o: tensor<32x32xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %y = "fm.track_block"(%x) <{block = 0 : i64, depth = 1 : i64, combine = #fm<combine sum>}> ({
    ^bb0(%t: tensor<?x32xf32>):
      %a = fm.attention %t at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv_t0 [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x32xf32> -> tensor<?x32xf32>
      // expected-error @+1 {{'fm.yield' op must be the last operation in the parent block}}
      "fm.yield"(%a) : (tensor<?x32xf32>) -> ()
      "fm.yield"(%a) : (tensor<?x32xf32>) -> ()
    }) : (tensor<?x32xf32>) -> tensor<?x32xf32>
    return %y : tensor<?x32xf32>
  }
}

// -----

// ODS: a track is one block.
func.func @track_empty_region(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.track_block' op region #1 ('tracks') failed to verify constraint: region with 1 blocks}}
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>) {
      fm.yield %t : tensor<?x32xf32>
    }
    track () {
    }
  return %y : tensor<?x32xf32>
}

// -----

func.func @track_two_blocks(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.track_block' op region #0 ('tracks') failed to verify constraint: region with 1 blocks}}
  %y = "fm.track_block"(%x) <{block = 0 : i64, depth = 1 : i64, combine = #fm<combine sum>}> ({
  ^bb0(%t: tensor<?x32xf32>):
    "fm.yield"(%t) : (tensor<?x32xf32>) -> ()
  ^bb1:
    "fm.yield"(%x) : (tensor<?x32xf32>) -> ()
  }) : (tensor<?x32xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// ODS: attribute presence and kinds.
func.func @no_block(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.track_block' op requires attribute 'block'}}
  %y = fm.track_block %x {depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>) {
      fm.yield %t : tensor<?x32xf32>
    }
  return %y : tensor<?x32xf32>
}

// -----

func.func @input_not_activation(%x: tensor<?x32xf16>) -> tensor<?x32xf16> {
  // expected-error @+1 {{'fm.track_block' op operand #0 must be 2D tensor of 32-bit float values, but got 'tensor<?x32xf16>'}}
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf16>
    track (%t: tensor<?x32xf16>) {
      fm.yield %t : tensor<?x32xf16>
    }
  return %y : tensor<?x32xf16>
}
