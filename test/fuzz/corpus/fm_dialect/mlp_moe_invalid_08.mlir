func.func @down_bias_shape(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  %db = fm.param "fc2.bias" : tensor<48xf32>
  %y = fm.mlp %x up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) down_bias(%db : tensor<48xf32>) {layer = 0 : i64, activation = #fm<activation gelu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
