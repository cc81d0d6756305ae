// ODS: fm.add takes two activations of the result type (generic form: the custom syntax has one type).
// (Shapes only need to be compatible: ?x64 and 4x64 would pass.)
func.func @add_mismatch(%x: tensor<?x64xf32>, %y: tensor<?x32xf32>) -> tensor<?x64xf32> {
  %z = "fm.add"(%x, %y) : (tensor<?x64xf32>, tensor<?x32xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}
