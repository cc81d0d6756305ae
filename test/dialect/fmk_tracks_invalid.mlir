// Diagnostics of fmk.tracks and fmk.all_reduce (TracksOp::verify,
// AllReduceOp::verify).
// RUN: fm-opt %s -split-input-file -verify-diagnostics

func.func @results(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'fmk.tracks' op track block 0: 2 tracks but 1 results}}
  %t = fmk.tracks block 0 : tensor<?x8xf32> {
    fmk.yield %x : tensor<?x8xf32>
  }, {
    fmk.yield %x : tensor<?x8xf32>
  }
  return
}

// -----

func.func @ranks(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'fmk.tracks' op track block 1: 1 ranks for 2 tracks}}
  %t:2 = fmk.tracks block 1 {ranks = array<i64: 0>} : tensor<?x8xf32>, tensor<?x8xf32> {
    fmk.yield %x : tensor<?x8xf32>
  }, {
    fmk.yield %x : tensor<?x8xf32>
  }
  return
}

// -----

func.func @negative_rank(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'fmk.tracks' op track block 0: rank -1 is negative}}
  %t = fmk.tracks block 0 {ranks = array<i64: -1>} : tensor<?x8xf32> {
    fmk.yield %x : tensor<?x8xf32>
  }
  return
}

// -----

func.func @yield_type(%x: tensor<?x8xf32>, %y: tensor<?x4xf32>) {
  // expected-error @+1 {{'fmk.tracks' op track 0 of block 0 must yield one value of type 'tensor<?x8xf32>'}}
  %t = fmk.tracks block 0 : tensor<?x8xf32> {
    fmk.yield %y : tensor<?x4xf32>
  }
  return
}

// -----

func.func @no_tracks() {
  // expected-error @+1 {{'fmk.tracks' op track block 0 has no tracks}}
  "fmk.tracks"() {block = 0 : i64} : () -> ()
  return
}

// -----

func.func @reduce_ranks(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'fmk.all_reduce' op 1 ranks for 2 partials}}
  %r = fmk.all_reduce %x, %x {scale = 1.0 : f64, ranks = array<i64: 0>} : tensor<?x8xf32>
  return
}

// -----

func.func @yield_outside(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'fmk.yield' op expects parent op to be one of 'fmk.group, fmk.tracks'}}
  fmk.yield %x : tensor<?x8xf32>
}
