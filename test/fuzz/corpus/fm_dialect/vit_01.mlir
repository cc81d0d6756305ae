// Patch embedding without pos, on a non-square image (224x160 in 16x16 patches = 14x10 = 140 tokens), bf16 weights.
func.func @patch_embed_no_pos(%image: tensor<3x224x160xf32>) -> tensor<140x64xf32> {
  %w = fm.param "w" : tensor<64x3x16x16xbf16>
  %b = fm.param "b" : tensor<64xbf16>
  %p = fm.patch_embed %image, %w, %b {patch_size = 16 : i64} : tensor<3x224x160xf32>, tensor<64x3x16x16xbf16>, tensor<64xbf16> -> tensor<140x64xf32>
  return %p : tensor<140x64xf32>
}
