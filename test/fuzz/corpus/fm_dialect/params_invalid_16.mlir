// #fm.quant syntax: the grid is balanced or affine.
func.func @grid_unknown() {
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 64, grid = symmetric, scale = f16>} : tensor<8x64xf32>
  return
}
