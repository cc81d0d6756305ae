// ODS: the image is [C, H, W] f32, without a batch dimension.
func.func @patch_image_batched(%img: tensor<1x3x64x64xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<1x3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}
