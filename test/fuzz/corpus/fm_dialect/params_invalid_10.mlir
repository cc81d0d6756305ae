func.func @group_0() {
  %w = fm.param "w" {quant = #fm.quant<bits = 2, group = 0, grid = balanced, scale = f16>} : tensor<8x64xf32>
  return
}
