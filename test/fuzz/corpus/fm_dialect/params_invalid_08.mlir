// #fm.quant: the group is a positive multiple of 32.
func.func @group_48() {
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 48, grid = balanced, scale = f16>} : tensor<8x96xf32>
  return
}
