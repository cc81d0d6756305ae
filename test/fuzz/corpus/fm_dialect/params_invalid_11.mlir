func.func @group_negative() {
  %w = fm.param "w" {quant = #fm.quant<bits = 2, group = -64, grid = balanced, scale = f16>} : tensor<8x64xf32>
  return
}
