// fm-lower-to-kernels reports the image-encoder ops it cannot lower, naming
// the op: register tokens on anything but a patch embedding's sole output,
// and an adapter convolution other than 3x3.
// RUN: fm-opt %s --fm-lower-to-kernels -split-input-file -verify-diagnostics

fm.model @m attributes {family = "fm_vit", hidden_size = 32 : i64, vocab_size = 0 : i64} {
  func.func @encode_image(%img: tensor<3x16x16xf32>) -> tensor<5x32xf32> attributes {fm.phase = "encode_image"} {
    %w = fm.param "w" : tensor<32x3x8x8xf32>
    %b = fm.param "b" : tensor<32xf32>
    %r = fm.param "r" : tensor<1x32xf32>
    %nw = fm.param "nw" : tensor<32xf32>
    %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x16x16xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<4x32xf32>
    %n = fm.layer_norm %p, %nw, %b {eps = 1.0e-06 : f64} : tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<4x32xf32>
    // expected-error @+1 {{register tokens must be prepended to the output of an fm.patch_embed that nothing else reads}}
    %x = fm.register_tokens %n, %r : tensor<4x32xf32>, tensor<1x32xf32> -> tensor<5x32xf32>
    return %x : tensor<5x32xf32>
  }
}

// -----

fm.model @m attributes {family = "fm_vit", hidden_size = 16 : i64, vocab_size = 0 : i64} {
  func.func @encode_image(%img: tensor<3x32x32xf32>) -> tensor<4x16xf32> attributes {fm.phase = "encode_image"} {
    %w = fm.param "w" : tensor<32x3x8x8xf32>
    %b = fm.param "b" : tensor<32xf32>
    %x = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x32x32xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<16x32xf32>
    %pw = fm.param "pw" : tensor<16x32xf32>
    %pb = fm.param "pb" : tensor<16xf32>
    %cw = fm.param "cw" : tensor<16x16x1x1xf32>
    %cb = fm.param "cb" : tensor<16xf32>
    // expected-error @+1 {{vl_adapter: a 1x1 convolution has no kernel (3x3 does)}}
    %t = fm.vl_adapter %x proj(%pw, %pb : tensor<16x32xf32>, tensor<16xf32>) conv(%cw, %cb : tensor<16x16x1x1xf32>, tensor<16xf32>) {grid = array<i64: 4, 4>, num_registers = 0 : i64, conv_kernel = 1 : i64, num_tokens = 4 : i64} : tensor<16x32xf32> -> tensor<4x16xf32>
    return %t : tensor<4x16xf32>
  }
}
