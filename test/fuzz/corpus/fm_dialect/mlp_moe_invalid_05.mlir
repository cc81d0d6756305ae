// ... and gate and down agree with it.
func.func @gate_shape(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  %g = fm.param "model.layers.2.mlp.gate_proj.weight" : tensor<40x32xf32>
  %y = fm.mlp %x gate(%g : tensor<40x32xf32>) up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 2 : i64, activation = #fm<activation swiglu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
