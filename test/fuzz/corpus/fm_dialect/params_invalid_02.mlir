func.func @quantized_scalar() {
  %s = fm.param "model.layers.0.self_attn.quant_key_scale" {quant = #fm.quant<bits = 8, group = 32, grid = balanced, scale = f32>} : tensor<f32>
  return
}
