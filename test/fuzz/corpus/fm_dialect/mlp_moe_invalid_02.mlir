func.func @gelu_with_gate(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  %y = fm.mlp %x gate(%u : tensor<48x32xf32>) up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 1 : i64, activation = #fm<activation gelu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
