// fm-lower-to-kernels reports the ops that have no CPU lowering yet (the ViT
// encoder), naming the op and the layer.
// RUN: fm-opt %s --fm-lower-to-kernels -split-input-file -verify-diagnostics

fm.model @m attributes {family = "vit", hidden_size = 32 : i64, vocab_size = 1 : i64} {
  func.func @encode(%img: tensor<3x16x16xf32>) -> tensor<4x32xf32> attributes {fm.phase = "encode"} {
    %w = fm.param "w" : tensor<32x3x8x8xf32>
    %b = fm.param "b" : tensor<32xf32>
    // expected-error @+1 {{fm.patch_embed has no lowering to the kernel level yet}}
    %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x16x16xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<4x32xf32>
    return %p : tensor<4x32xf32>
  }
}

// -----

fm.model @m attributes {family = "vit", hidden_size = 32 : i64, vocab_size = 1 : i64} {
  func.func @encode(%x: tensor<4x32xf32>) -> tensor<4x32xf32> attributes {fm.phase = "encode"} {
    %u = fm.param "u" : tensor<64x32xf32>
    %d = fm.param "d" : tensor<32x64xf32>
    // expected-error @+1 {{layer 0: GELU MLPs (ViT) have no CPU lowering yet}}
    %y = fm.mlp %x up(%u : tensor<64x32xf32>) down(%d : tensor<32x64xf32>) {activation = #fm<activation gelu>, layer = 0 : i64} : tensor<4x32xf32> -> tensor<4x32xf32>
    return %y : tensor<4x32xf32>
  }
}
