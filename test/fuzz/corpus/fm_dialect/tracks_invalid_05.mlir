func.func @track_argument_type(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %y = fm.track_block %x {block = 3 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<8x32xf32>
    track (%t: tensor<?x32xf32>) {
      fm.yield %x : tensor<8x32xf32>
    }
  return %y : tensor<8x32xf32>
}
