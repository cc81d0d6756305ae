func.func @patch_weight_kernel(%img: tensor<3x64x64xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %w = fm.param "vision.patch_embed.weight" : tensor<32x3x16x16xf32>
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x64x64xf32>, tensor<32x3x16x16xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}
