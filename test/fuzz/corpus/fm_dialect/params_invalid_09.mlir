func.func @group_16() {
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 16, grid = balanced, scale = f16>} : tensor<8x64xf32>
  return
}
