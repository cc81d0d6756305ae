// Diagnostics of fmk.tracks and fmk.all_reduce (TracksOp::verify,
// AllReduceOp::verify).

func.func @results(%x: tensor<?x8xf32>) {
  %t = fmk.tracks block 0 : tensor<?x8xf32> {
    fmk.yield %x : tensor<?x8xf32>
  }, {
    fmk.yield %x : tensor<?x8xf32>
  }
  return
}
