// SwiGLU with biases on up and down.
func.func @mlp_swiglu_biases(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %g = fm.param "g" : tensor<96x32xf32>
  %u = fm.param "u" : tensor<96x32xf32>
  %d = fm.param "d" : tensor<32x96xf32>
  %ub = fm.param "ub" : tensor<96xf32>
  %db = fm.param "db" : tensor<32xf32>
  %y = fm.mlp %x gate(%g : tensor<96x32xf32>) up(%u : tensor<96x32xf32>) down(%d : tensor<32x96xf32>) up_bias(%ub : tensor<96xf32>) down_bias(%db : tensor<32xf32>) {layer = 0 : i64, activation = #fm<activation swiglu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
