// Every stored dtype and rank: f16 matrix, bf16 vector, f32 scalar (a KV scale), 4-D conv weight.
func.func @dtypes_and_ranks() {
  %a = fm.param "w16" : tensor<8x32xf16>
  %b = fm.param "norm" : tensor<32xbf16>
  %c = fm.param "model.layers.0.self_attn.quant_key_scale" : tensor<f32>
  %d = fm.param "vision.patch_embed.weight" from "vision.safetensors" : tensor<32x3x8x8xf32>
  return
}
