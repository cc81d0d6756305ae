func.func @track_two_arguments(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>, %u: tensor<?x32xf32>) {
      fm.yield %t : tensor<?x32xf32>
    }
  return %y : tensor<?x32xf32>
}
