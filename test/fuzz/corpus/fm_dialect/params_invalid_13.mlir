func.func @scale_f64() {
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 64, grid = balanced, scale = f64>} : tensor<8x64xf32>
  return
}
