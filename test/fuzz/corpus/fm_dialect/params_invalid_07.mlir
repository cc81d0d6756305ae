func.func @bits_0() {
  %w = fm.param "w" {quant = #fm.quant<bits = 0, group = 64, grid = balanced, scale = f16>} : tensor<8x64xf32>
  return
}
