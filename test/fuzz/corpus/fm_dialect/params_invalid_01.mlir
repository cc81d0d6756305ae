func.func @dynamic_shape() {
  %w = fm.param "model.layers.0.mlp.up_proj.weight" : tensor<?x64xf32>
  return
}
