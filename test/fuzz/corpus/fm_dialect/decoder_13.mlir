// GELU MLP without a gate, with and without biases.
func.func @mlp_gelu(%x: tensor<65x32xf32>) -> tensor<65x32xf32> {
  %u = fm.param "fc1.weight" : tensor<48x32xf32>
  %ub = fm.param "fc1.bias" : tensor<48xf32>
  %d = fm.param "fc2.weight" : tensor<32x48xf32>
  %db = fm.param "fc2.bias" : tensor<32xf32>
  %y = fm.mlp %x up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) up_bias(%ub : tensor<48xf32>) down_bias(%db : tensor<32xf32>) {layer = 0 : i64, activation = #fm<activation gelu>} : tensor<65x32xf32> -> tensor<65x32xf32>
  %z = fm.mlp %y up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 1 : i64, activation = #fm<activation gelu>} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %z : tensor<65x32xf32>
}
