func.func @patch_result(%img: tensor<3x64x32xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x64x32xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}
