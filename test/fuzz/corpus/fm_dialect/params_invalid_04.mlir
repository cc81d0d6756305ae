// Dividing the output (first) dimension is not enough.
func.func @group_divides_wrong_dim() {
  %w = fm.param "w" from "model.safetensors" {quant = #fm.quant<bits = 4, group = 128, grid = affine, scale = f16>} : tensor<256x64xf32>
  return
}
