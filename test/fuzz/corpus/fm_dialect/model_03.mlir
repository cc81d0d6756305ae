// An encoder: no cache, one "encode" phase with a static image input.
fm.model @vit_only attributes {family = "vit", vocab_size = 1 : i64, hidden_size = 8 : i64} {
  func.func @encode(%image: tensor<3x32x32xf32>) -> tensor<16x8xf32> attributes {fm.phase = "encode"} {
    %w = fm.param "vision.patch_embed.weight" : tensor<8x3x8x8xf32>
    %b = fm.param "vision.patch_embed.bias" : tensor<8xf32>
    %p = fm.patch_embed %image, %w, %b {patch_size = 8 : i64} : tensor<3x32x32xf32>, tensor<8x3x8x8xf32>, tensor<8xf32> -> tensor<16x8xf32>
    return %p : tensor<16x8xf32>
  }
}
