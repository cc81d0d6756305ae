// 8-bit: groups of 128/64 on a 1-D parameter (the input dimension is the last one).
func.func @quant_8bit() {
  %a = fm.param "lm_head.weight" {quant = #fm.quant<bits = 8, group = 128, grid = balanced, scale = f32>} : tensor<512x128xf32>
  %b = fm.param "bias" {quant = #fm.quant<bits = 8, group = 64, grid = affine, scale = f16>} : tensor<192xf32>
  return
}
