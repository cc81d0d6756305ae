// The position table covers the patches only (registers come later).
func.func @patch_pos(%img: tensor<3x64x64xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %pos = fm.param "vision.pos_embed" : tensor<65x32xf32>
  %p = fm.patch_embed %img, %w, %b pos(%pos : tensor<65x32xf32>) {patch_size = 8 : i64} : tensor<3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}
