// Diagnostics of the ViT encoder ops: fm.patch_embed, fm.register_tokens, fm.layer_norm, fm.vit_attention (grid, heads, window, token count, weights) and fm.vl_adapter (grid, pooling, conv kernel, weights), with their ODS constraints.

func.func @patch_size_zero(%img: tensor<3x64x64xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %p = fm.patch_embed %img, %w, %b {patch_size = 0 : i64} : tensor<3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}
