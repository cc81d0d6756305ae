func.func @bits_16() {
  %w = fm.param "w" {quant = #fm.quant<bits = 16, group = 64, grid = affine, scale = f32>} : tensor<8x64xf32>
  return
}
