// Bug 7 (garbage arithmetic on kDynamic): fm.patch_embed accepts a dynamic H/W and computes with kDynamic: here it says
// "result must be [0, 32] (-1152921504606846976x-1152921504606846976 patches), got [?, 32]" (with signed overflow),
// and a 3x?x64 image with a ?-row result is silently accepted.
func.func @f(%img: tensor<3x?x?xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<?x32xf32> {
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x?x?xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<?x32xf32>
  return %p : tensor<?x32xf32>
}
