// #fm.quant: scales are f16, bf16 or f32.
func.func @scale_i8() {
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 64, grid = affine, scale = i8>} : tensor<8x64xf32>
  return
}
