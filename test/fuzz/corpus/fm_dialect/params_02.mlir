// 2-bit balanced with f16 scales, groups of 64: the afm7 on-device recipe.
func.func @quant_2bit() {
  %a = fm.param "model.layers.0.mlp.up_proj.weight" {quant = #fm.quant<bits = 2, group = 64, grid = balanced, scale = f16>} : tensor<172x64xf32>
  %b = fm.param "model.layers.0.mlp.down_proj.weight" from "model.safetensors" {quant = #fm.quant<bits = 2, group = 32, grid = affine, scale = f32>} : tensor<64x160xf32>
  return
}
