// Diagnostics of the decoder ops outside attention and the MLP: fm.embedding, fm.rms_norm, fm.add, fm.take_last and fm.lm_head (verifiers and ODS constraints).
// RUN: fm-opt %s -split-input-file -verify-diagnostics

func.func @embedding_table_1d(%t: tensor<?xi32>) -> tensor<?x64xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<8192xf32>
  // expected-error @+1 {{'fm.embedding' op embedding table must be [vocab, hidden], got [8192]}}
  %x = fm.embedding %t, %e : tensor<?xi32>, tensor<8192xf32> -> tensor<?x64xf32>
  return %x : tensor<?x64xf32>
}

// -----

func.func @embedding_width(%t: tensor<?xi32>) -> tensor<?x32xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  // expected-error @+1 {{'fm.embedding' op embedding of width 64 cannot produce activations of width 32}}
  %x = fm.embedding %t, %e : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x32xf32>
  return %x : tensor<?x32xf32>
}

// -----

func.func @embedding_rows(%t: tensor<5xi32>) -> tensor<6x64xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  // expected-error @+1 {{'fm.embedding' op 5 tokens cannot produce 6 rows}}
  %x = fm.embedding %t, %e : tensor<5xi32>, tensor<128x64xf32> -> tensor<6x64xf32>
  return %x : tensor<6x64xf32>
}

// -----

// ODS: token ids are a 1-D i32 tensor.
func.func @embedding_tokens_i64(%t: tensor<?xi64>) -> tensor<?x64xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  // expected-error @+1 {{'fm.embedding' op operand #0 must be 1D tensor of 32-bit signless integer values, but got 'tensor<?xi64>'}}
  %x = fm.embedding %t, %e : tensor<?xi64>, tensor<128x64xf32> -> tensor<?x64xf32>
  return %x : tensor<?x64xf32>
}

// -----

func.func @embedding_tokens_2d(%t: tensor<1x?xi32>) -> tensor<?x64xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  // expected-error @+1 {{'fm.embedding' op operand #0 must be 1D tensor of 32-bit signless integer values, but got 'tensor<1x?xi32>'}}
  %x = fm.embedding %t, %e : tensor<1x?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
  return %x : tensor<?x64xf32>
}

// -----

// ODS: activations are 2-D f32 tensors (no batch dimension, no f16 activations).
func.func @embedding_result_3d(%t: tensor<?xi32>) -> tensor<1x?x64xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  // expected-error @+1 {{'fm.embedding' op result #0 must be 2D tensor of 32-bit float values, but got 'tensor<1x?x64xf32>'}}
  %x = fm.embedding %t, %e : tensor<?xi32>, tensor<128x64xf32> -> tensor<1x?x64xf32>
  return %x : tensor<1x?x64xf32>
}

// -----

func.func @rms_norm_dynamic_width(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %w = fm.param "norm" : tensor<64xf32>
  // expected-error @+1 {{'fm.rms_norm' op rms_norm: the feature dimension must be static}}
  %n = fm.rms_norm %x, %w {eps = 1.0e-05 : f64} : tensor<?x?xf32>, tensor<64xf32> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

func.func @rms_norm_eps_zero(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = fm.param "norm" : tensor<64xf32>
  // expected-error @+1 {{'fm.rms_norm' op rms_norm: eps must be positive}}
  %n = fm.rms_norm %x, %w {eps = 0.0 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  return %n : tensor<?x64xf32>
}

// -----

func.func @rms_norm_eps_negative(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = fm.param "norm" : tensor<64xf32>
  // expected-error @+1 {{'fm.rms_norm' op rms_norm: eps must be positive}}
  %n = fm.rms_norm %x, %w {eps = -1.0e-06 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  return %n : tensor<?x64xf32>
}

// -----

func.func @rms_norm_weight(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = fm.param "model.layers.0.input_layernorm.weight" : tensor<32xf32>
  // expected-error @+1 {{'fm.rms_norm' op rms_norm: norm weight 'model.layers.0.input_layernorm.weight' has shape [32], expected [64] (hidden size)}}
  %n = fm.rms_norm %x, %w {eps = 1.0e-05 : f64} : tensor<?x64xf32>, tensor<32xf32> -> tensor<?x64xf32>
  return %n : tensor<?x64xf32>
}

// -----

func.func @rms_norm_result(%x: tensor<?x64xf32>) -> tensor<4x64xf32> {
  %w = fm.param "norm" : tensor<64xf32>
  // expected-error @+1 {{'fm.rms_norm' op rms_norm: result type 'tensor<4x64xf32>' differs from the input type 'tensor<?x64xf32>'}}
  %n = fm.rms_norm %x, %w {eps = 1.0e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<4x64xf32>
  return %n : tensor<4x64xf32>
}

// -----

// ODS: eps is an f64 and is required.
func.func @rms_norm_eps_f32(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = fm.param "norm" : tensor<64xf32>
  // expected-error @+1 {{attribute 'eps' failed to satisfy constraint: 64-bit float attribute}}
  %n = fm.rms_norm %x, %w {eps = 1.0e-05 : f32} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  return %n : tensor<?x64xf32>
}

// -----

func.func @rms_norm_no_eps(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = fm.param "norm" : tensor<64xf32>
  // expected-error @+1 {{'fm.rms_norm' op requires attribute 'eps'}}
  %n = fm.rms_norm %x, %w : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  return %n : tensor<?x64xf32>
}

// -----

// ODS: fm.add takes two activations of the result type (generic form: the custom syntax has one type).
// (Shapes only need to be compatible: ?x64 and 4x64 would pass.)
func.func @add_mismatch(%x: tensor<?x64xf32>, %y: tensor<?x32xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'fm.add' op requires the same type for all operands and results}}
  %z = "fm.add"(%x, %y) : (tensor<?x64xf32>, tensor<?x32xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}

// -----

func.func @add_f16(%x: tensor<?x64xf16>) -> tensor<?x64xf16> {
  // expected-error @+1 {{'fm.add' op operand #0 must be 2D tensor of 32-bit float values, but got 'tensor<?x64xf16>'}}
  %z = fm.add %x, %x : tensor<?x64xf16>
  return %z : tensor<?x64xf16>
}

// -----

func.func @take_last_rows(%x: tensor<?x64xf32>, %pos: index) -> tensor<2x64xf32> {
  // expected-error @+1 {{'fm.take_last' op take_last of [?, 64] must give [1, 64], got [2, 64]}}
  %r, %p = fm.take_last %x at %pos : tensor<?x64xf32> -> tensor<2x64xf32>
  return %r : tensor<2x64xf32>
}

// -----

func.func @take_last_width(%x: tensor<8x64xf32>, %pos: index) -> tensor<1x32xf32> {
  // expected-error @+1 {{'fm.take_last' op take_last of [8, 64] must give [1, 64], got [1, 32]}}
  %r, %p = fm.take_last %x at %pos : tensor<8x64xf32> -> tensor<1x32xf32>
  return %r : tensor<1x32xf32>
}

// -----

// ODS: the position is an index (generic form: the custom syntax fixes both types).
func.func @take_last_pos_i64(%x: tensor<8x64xf32>, %pos: i64) -> tensor<1x64xf32> {
  // expected-error @+1 {{'fm.take_last' op operand #1 must be index, but got 'i64'}}
  %r:2 = "fm.take_last"(%x, %pos) : (tensor<8x64xf32>, i64) -> (tensor<1x64xf32>, index)
  return %r#0 : tensor<1x64xf32>
}

// -----

func.func @lm_head_dynamic_width(%x: tensor<?x?xf32>) -> tensor<?x128xf32> {
  %w = fm.param "lm_head.weight" : tensor<128x64xf32>
  // expected-error @+1 {{'fm.lm_head' op lm_head: the feature dimension must be static}}
  %l = fm.lm_head %x, %w : tensor<?x?xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}

// -----

func.func @lm_head_weight_width(%x: tensor<?x64xf32>) -> tensor<?x128xf32> {
  %w = fm.param "lm_head.weight" : tensor<128x32xf32>
  // expected-error @+1 {{'fm.lm_head' op lm_head: weight has shape [128, 32], expected [vocab, 64]}}
  %l = fm.lm_head %x, %w : tensor<?x64xf32>, tensor<128x32xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}

// -----

func.func @lm_head_weight_1d(%x: tensor<?x64xf32>) -> tensor<?x128xf32> {
  %w = fm.param "lm_head.weight" : tensor<64xf32>
  // expected-error @+1 {{'fm.lm_head' op lm_head: weight has shape [64], expected [vocab, 64]}}
  %l = fm.lm_head %x, %w : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}

// -----

func.func @lm_head_logits_width(%x: tensor<?x64xf32>) -> tensor<?x100xf32> {
  %w = fm.param "lm_head.weight" : tensor<128x64xf32>
  // expected-error @+1 {{'fm.lm_head' op lm_head: 128 vocabulary rows cannot produce logits of width 100}}
  %l = fm.lm_head %x, %w : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x100xf32>
  return %l : tensor<?x100xf32>
}

// -----

// A tied head must use the embedding table's parameter ...
func.func @lm_head_tied_other_param(%t: tensor<?xi32>) -> tensor<?x128xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %t, %e : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
  %w = fm.param "lm_head.weight" : tensor<128x64xf32>
  // expected-error @+1 {{'fm.lm_head' op lm_head is tied, but its weight 'lm_head.weight' is not the token embedding table}}
  %l = fm.lm_head %x, %w {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}

// -----

// ... of an embedding in the same function.
func.func @lm_head_tied_no_embedding(%x: tensor<?x64xf32>) -> tensor<?x128xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  // expected-error @+1 {{'fm.lm_head' op lm_head is tied, but its weight 'model.embed_tokens.weight' is not the token embedding table}}
  %l = fm.lm_head %x, %e {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}

// -----

// ODS: tied is a unit attribute.
func.func @lm_head_tied_bool(%t: tensor<?xi32>) -> tensor<?x128xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %t, %e : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
  // expected-error @+1 {{attribute 'tied' failed to satisfy constraint: unit attribute}}
  %l = fm.lm_head %x, %e {tied = true} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}
