// A track with no operations (not even fm.yield) is reported, not a crash (the verifier once called getTerminator() on the empty block).
// The read is undefined behaviour and may happen to give the right message; valgrind makes it deterministic.

func.func @empty_track(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>) {
    }
  return %y : tensor<?x32xf32>
}
