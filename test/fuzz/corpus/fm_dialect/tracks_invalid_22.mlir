func.func @input_not_activation(%x: tensor<?x32xf16>) -> tensor<?x32xf16> {
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf16>
    track (%t: tensor<?x32xf16>) {
      fm.yield %t : tensor<?x32xf16>
    }
  return %y : tensor<?x32xf16>
}
