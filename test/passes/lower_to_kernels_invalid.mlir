// fm-lower-to-kernels reports the ops that have no CPU lowering yet, with
// their layer.
// RUN: fm-opt %s --fm-lower-to-kernels -split-input-file -verify-diagnostics

fm.model @m attributes {family = "mixtral", hidden_size = 32 : i64, vocab_size = 48 : i64} {
  func.func @prefill(%x: tensor<?x32xf32>) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %r = fm.param "router" : tensor<2x32xf32>
    %g = fm.param "g" : tensor<16x32xf32>
    %d = fm.param "d" : tensor<32x16xf32>
    // expected-error @+1 {{layer 3: fm.moe has no lowering to the CPU target yet}}
    %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 3 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
    return %y : tensor<?x32xf32>
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
