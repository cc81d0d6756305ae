// #fm.quant syntax: every field is required.
func.func @missing_scale() {
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 64, grid = balanced>} : tensor<8x64xf32>
  return
}
