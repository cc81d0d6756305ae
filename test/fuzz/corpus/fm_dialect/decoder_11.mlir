// SwiGLU MLP (gate/up/down).
func.func @mlp_swiglu(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %g = fm.param "model.layers.3.mlp.gate_proj.weight" : tensor<172x64xf32>
  %u = fm.param "model.layers.3.mlp.up_proj.weight" : tensor<172x64xf32>
  %d = fm.param "model.layers.3.mlp.down_proj.weight" : tensor<64x172xf32>
  %y = fm.mlp %x gate(%g : tensor<172x64xf32>) up(%u : tensor<172x64xf32>) down(%d : tensor<64x172xf32>) {layer = 3 : i64, activation = #fm<activation swiglu>} : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
