func.func @down_transposed(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>) -> tensor<?x32xf32> {
  %d = fm.param "model.layers.0.mlp.down_proj.weight" : tensor<48x32xf32>
  %y = fm.mlp %x gate(%u : tensor<48x32xf32>) up(%u : tensor<48x32xf32>) down(%d : tensor<48x32xf32>) {layer = 0 : i64, activation = #fm<activation swiglu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
