// #fm.quant: 2, 4 or 8 bits.
func.func @bits_3() {
  %w = fm.param "w" {quant = #fm.quant<bits = 3, group = 64, grid = balanced, scale = f16>} : tensor<8x64xf32>
  return
}
