// A track ends with fm.yield.
func.func @track_without_yield(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine sum>} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>) {
      %z = fm.add %t, %t : tensor<?x32xf32>
    }
  return %y : tensor<?x32xf32>
}
