// ODS: attribute presence and kinds.
func.func @no_block(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = fm.track_block %x {depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>) {
      fm.yield %t : tensor<?x32xf32>
    }
  return %y : tensor<?x32xf32>
}
