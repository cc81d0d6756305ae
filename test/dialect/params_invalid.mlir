// Diagnostics of fm.param (key, static shape, quantizable shape, ODS result/attribute constraints) and of #fm.quant (QuantAttr::verify: bits, group, scale type; its syntax).
// RUN: fm-opt %s -split-input-file -verify-diagnostics

func.func @empty_key() {
  // expected-error @+1 {{'fm.param' op a parameter needs a non-empty checkpoint key}}
  %w = fm.param "" : tensor<64xf32>
  return
}

// -----

func.func @dynamic_shape() {
  // expected-error @+1 {{'fm.param' op parameter 'model.layers.0.mlp.up_proj.weight' must have a static shape, got 'tensor<?x64xf32>'}}
  %w = fm.param "model.layers.0.mlp.up_proj.weight" : tensor<?x64xf32>
  return
}

// -----

func.func @quantized_scalar() {
  // expected-error @+1 {{'fm.param' op parameter 'model.layers.0.self_attn.quant_key_scale' is a scalar and cannot be quantized}}
  %s = fm.param "model.layers.0.self_attn.quant_key_scale" {quant = #fm.quant<bits = 8, group = 32, grid = balanced, scale = f32>} : tensor<f32>
  return
}

// -----

// The group runs along the input (last) dimension, which it must divide.
func.func @group_does_not_divide() {
  // expected-error @+1 {{'fm.param' op parameter 'model.layers.0.mlp.down_proj.weight': quantization group 64 does not divide its input dimension 96}}
  %w = fm.param "model.layers.0.mlp.down_proj.weight" {quant = #fm.quant<bits = 2, group = 64, grid = balanced, scale = f16>} : tensor<64x96xf32>
  return
}

// -----

// Dividing the output (first) dimension is not enough.
func.func @group_divides_wrong_dim() {
  // expected-error @+1 {{'fm.param' op parameter 'w': quantization group 128 does not divide its input dimension 64}}
  %w = fm.param "w" from "model.safetensors" {quant = #fm.quant<bits = 4, group = 128, grid = affine, scale = f16>} : tensor<256x64xf32>
  return
}

// -----

// #fm.quant: 2, 4 or 8 bits.
func.func @bits_3() {
  // expected-error @+1 {{quantization to 3 bits is not supported (2, 4 or 8)}}
  %w = fm.param "w" {quant = #fm.quant<bits = 3, group = 64, grid = balanced, scale = f16>} : tensor<8x64xf32>
  return
}

// -----

func.func @bits_16() {
  // expected-error @+1 {{quantization to 16 bits is not supported (2, 4 or 8)}}
  %w = fm.param "w" {quant = #fm.quant<bits = 16, group = 64, grid = affine, scale = f32>} : tensor<8x64xf32>
  return
}

// -----

func.func @bits_0() {
  // expected-error @+1 {{quantization to 0 bits is not supported (2, 4 or 8)}}
  %w = fm.param "w" {quant = #fm.quant<bits = 0, group = 64, grid = balanced, scale = f16>} : tensor<8x64xf32>
  return
}

// -----

// #fm.quant: the group is a positive multiple of 32.
func.func @group_48() {
  // expected-error @+1 {{quantization group 48 must be a positive multiple of 32}}
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 48, grid = balanced, scale = f16>} : tensor<8x96xf32>
  return
}

// -----

func.func @group_16() {
  // expected-error @+1 {{quantization group 16 must be a positive multiple of 32}}
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 16, grid = balanced, scale = f16>} : tensor<8x64xf32>
  return
}

// -----

func.func @group_0() {
  // expected-error @+1 {{quantization group 0 must be a positive multiple of 32}}
  %w = fm.param "w" {quant = #fm.quant<bits = 2, group = 0, grid = balanced, scale = f16>} : tensor<8x64xf32>
  return
}

// -----

func.func @group_negative() {
  // expected-error @+1 {{quantization group -64 must be a positive multiple of 32}}
  %w = fm.param "w" {quant = #fm.quant<bits = 2, group = -64, grid = balanced, scale = f16>} : tensor<8x64xf32>
  return
}

// -----

// #fm.quant: scales are f16, bf16 or f32.
func.func @scale_i8() {
  // expected-error @+1 {{quantization scale type must be f16, bf16 or f32}}
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 64, grid = affine, scale = i8>} : tensor<8x64xf32>
  return
}

// -----

func.func @scale_f64() {
  // expected-error @+1 {{quantization scale type must be f16, bf16 or f32}}
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 64, grid = balanced, scale = f64>} : tensor<8x64xf32>
  return
}

// -----

func.func @scale_tensor() {
  // expected-error @+1 {{quantization scale type must be f16, bf16 or f32}}
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 64, grid = balanced, scale = tensor<f16>>} : tensor<8x64xf32>
  return
}

// -----

// The quant attribute is checked wherever it appears, not only on fm.param.
// expected-error @+1 {{quantization to 5 bits is not supported (2, 4 or 8)}}
func.func @standalone_attr() attributes {recipe = #fm.quant<bits = 5, group = 64, grid = balanced, scale = f16>} {
  return
}

// -----

// #fm.quant syntax: the grid is balanced or affine.
func.func @grid_unknown() {
  // expected-error @+2 {{expected ::mlir::fm::QuantGrid to be one of: balanced, affine}}
  // expected-error @+1 {{failed to parse Fm_QuantAttr parameter 'grid' which is to be a `::mlir::fm::QuantGrid`}}
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 64, grid = symmetric, scale = f16>} : tensor<8x64xf32>
  return
}

// -----

// #fm.quant syntax: every field is required.
func.func @missing_scale() {
  // expected-error @+1 {{expected ','}}
  %w = fm.param "w" {quant = #fm.quant<bits = 4, group = 64, grid = balanced>} : tensor<8x64xf32>
  return
}

// -----

// ODS: the quant attribute must be an #fm.quant.
func.func @quant_not_quant() {
  // expected-error @+1 {{attribute 'quant' failed to satisfy constraint: how a parameter is quantized}}
  %w = fm.param "w" {quant = 2 : i64} : tensor<8x64xf32>
  return
}

// -----

// ODS: the file is a string.
func.func @file_not_string() {
  // expected-error @+1 {{attribute 'file' failed to satisfy constraint: string attribute}}
  %w = fm.param "w" {file = 3 : i64} : tensor<8x64xf32>
  return
}

// -----

// ODS: the key is a required string.
func.func @key_not_string() {
  // expected-error @+1 {{Invalid attribute `key` in property conversion: 3 : i64}}
  %w = "fm.param"() <{key = 3 : i64}> : () -> tensor<8x64xf32>
  return
}

// -----

func.func @key_missing() {
  // expected-error @+1 {{'fm.param' op requires attribute 'key'}}
  %w = "fm.param"() : () -> tensor<8x64xf32>
  return
}

// -----

// ODS: parameters are f32/f16/bf16 (integer data is not a parameter) ...
func.func @int_param() {
  // expected-error @+1 {{'fm.param' op result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<64x64xi8>'}}
  %w = fm.param "w" : tensor<64x64xi8>
  return
}

// -----

func.func @f64_param() {
  // expected-error @+1 {{'fm.param' op result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<64xf64>'}}
  %w = fm.param "w" : tensor<64xf64>
  return
}

// -----

// ... and ranked tensors.
func.func @unranked_param() {
  // expected-error @+1 {{custom op 'fm.param' invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %w = fm.param "w" : tensor<*xf32>
  return
}

// -----

func.func @memref_param() {
  // expected-error @+1 {{'fm.param' op result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'memref<64xf32>'}}
  %w = "fm.param"() <{key = "w"}> : () -> memref<64xf32>
  return
}

// -----

func.func @storage_type() {
  // expected-error @+1 {{'fm.param' op parameter 'w': storage 'bf16' is not supported (f16 or f32)}}
  %w = fm.param "w" {storage = bf16} : tensor<4x4xf32>
  return
}

// -----

func.func @storage_and_quant() {
  // expected-error @+1 {{'fm.param' op parameter 'w' has both a quantized format and a storage type}}
  %w = fm.param "w" {quant = #fm.quant<bits = 2, group = 32, grid = balanced, scale = f16>, storage = f16} : tensor<4x32xf32>
  return
}
