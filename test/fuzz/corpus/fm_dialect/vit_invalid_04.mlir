func.func @patch_image_not_whole(%img: tensor<3x60x64xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<56x32xf32> {
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x60x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<56x32xf32>
  return %p : tensor<56x32xf32>
}
