// The intermediate size is read from up; up's input must be the hidden size ...
func.func @up_shape(%x: tensor<?x32xf32>, %g: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  %u = fm.param "model.layers.0.mlp.up_proj.weight" : tensor<48x64xf32>
  %y = fm.mlp %x gate(%g : tensor<48x32xf32>) up(%u : tensor<48x64xf32>) down(%d : tensor<32x48xf32>) {layer = 0 : i64, activation = #fm<activation swiglu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
