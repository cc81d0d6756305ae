// 4-bit: both grids, groups of 128 and 32, f16/f32/bf16 scales.
func.func @quant_4bit() {
  %a = fm.param "a" {quant = #fm.quant<bits = 4, group = 128, grid = affine, scale = f16>} : tensor<64x256xf32>
  %b = fm.param "b" {quant = #fm.quant<bits = 4, group = 32, grid = balanced, scale = f32>} : tensor<64x96xf16>
  %c = fm.param "c" {quant = #fm.quant<bits = 4, group = 64, grid = affine, scale = bf16>} : tensor<64x64xbf16>
  return
}
