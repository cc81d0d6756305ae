// Round trip of the ViT encoder ops: fm.patch_embed (with/without pos), fm.layer_norm, fm.register_tokens, fm.vit_attention (global/window, registers) and fm.vl_adapter.

// Patch embedding with an absolute position table: 64x64 image, 8x8 patches -> 64 tokens.
func.func @patch_embed_pos(%image: tensor<3x64x64xf32>) -> tensor<64x32xf32> {
  %w = fm.param "vision.patch_embed.weight" : tensor<32x3x8x8xf32>
  %b = fm.param "vision.patch_embed.bias" : tensor<32xf32>
  %pos = fm.param "vision.pos_embed" : tensor<64x32xf32>
  %p = fm.patch_embed %image, %w, %b pos(%pos : tensor<64x32xf32>) {patch_size = 8 : i64} : tensor<3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}
