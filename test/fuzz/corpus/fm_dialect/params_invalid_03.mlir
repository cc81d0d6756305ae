// The group runs along the input (last) dimension, which it must divide.
func.func @group_does_not_divide() {
  %w = fm.param "model.layers.0.mlp.down_proj.weight" {quant = #fm.quant<bits = 2, group = 64, grid = balanced, scale = f16>} : tensor<64x96xf32>
  return
}
