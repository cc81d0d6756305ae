// The result has the input's type (generic form: the custom syntax has one type).
func.func @result_type(%x: tensor<?x32xf32>) -> tensor<4x32xf32> {
  %y = "fm.track_block"(%x) <{block = 0 : i64, depth = 1 : i64, combine = #fm<combine sum>}> ({
  ^bb0(%t: tensor<?x32xf32>):
    "fm.yield"(%t) : (tensor<?x32xf32>) -> ()
  }) : (tensor<?x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}
