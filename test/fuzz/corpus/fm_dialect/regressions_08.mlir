// Bug 1: TrackBlockOp::verify tests "getDepth() <= 0" on a uint64_t: depth -1 passes that rule and is then reported
// as "has 0 layers, but the block has depth 18446744073709551615".
func.func @f(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = fm.track_block %x {block = 0 : i64, depth = -1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>) {
      fm.yield %t : tensor<?x32xf32>
    }
  return %y : tensor<?x32xf32>
}
