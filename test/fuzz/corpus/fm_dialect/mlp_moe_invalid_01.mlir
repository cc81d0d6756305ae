func.func @swiglu_without_gate(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  %y = fm.mlp %x up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 4 : i64, activation = #fm<activation swiglu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
