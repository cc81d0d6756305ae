func.func @patch_bias(%img: tensor<3x64x64xf32>, %w: tensor<32x3x8x8xf32>) -> tensor<64x32xf32> {
  %b = fm.param "vision.patch_embed.bias" : tensor<16xf32>
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<16xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}
