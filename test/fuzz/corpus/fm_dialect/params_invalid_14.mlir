func.func @scale_tensor() {
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 64, grid = balanced, scale = tensor<f16>>} : tensor<8x64xf32>
  return
}
