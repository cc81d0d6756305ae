// Round trip of fm.param: with and without `from`, every dtype, and #fm.quant over bits 2/4/8, groups 32/64/128, both grids and scale types.
// RUN: fm-opt %s -split-input-file | fm-opt -split-input-file | FileCheck %s
// RUN: fm-opt %s -split-input-file > %t.1 && fm-opt %t.1 -split-input-file > %t.2 && diff %t.1 %t.2

// The key alone, and the key with the checkpoint file it lives in.
// CHECK-LABEL: func.func @key_and_file
// CHECK-NEXT: fm.param "model.layers.0.mlp.up_proj.weight" : tensor<172x64xf32>
// CHECK-NEXT: fm.param "model.layers.0.mlp.up_proj.weight" from "model-00001-of-00002.safetensors" : tensor<172x64xbf16>
func.func @key_and_file() -> (tensor<172x64xf32>, tensor<172x64xbf16>) {
  %a = fm.param "model.layers.0.mlp.up_proj.weight" : tensor<172x64xf32>
  %b = fm.param "model.layers.0.mlp.up_proj.weight" from "model-00001-of-00002.safetensors" : tensor<172x64xbf16>
  return %a, %b : tensor<172x64xf32>, tensor<172x64xbf16>
}

// -----

// Every stored dtype and rank: f16 matrix, bf16 vector, f32 scalar (a KV scale), 4-D conv weight.
// CHECK-LABEL: func.func @dtypes_and_ranks
// CHECK-NEXT: fm.param "w16" : tensor<8x32xf16>
// CHECK-NEXT: fm.param "norm" : tensor<32xbf16>
// CHECK-NEXT: fm.param "model.layers.0.self_attn.quant_key_scale" : tensor<f32>
// CHECK-NEXT: fm.param "vision.patch_embed.weight" from "vision.safetensors" : tensor<32x3x8x8xf32>
func.func @dtypes_and_ranks() {
  %a = fm.param "w16" : tensor<8x32xf16>
  %b = fm.param "norm" : tensor<32xbf16>
  %c = fm.param "model.layers.0.self_attn.quant_key_scale" : tensor<f32>
  %d = fm.param "vision.patch_embed.weight" from "vision.safetensors" : tensor<32x3x8x8xf32>
  return
}

// -----

// 2-bit balanced with f16 scales, groups of 64: the afm7 on-device recipe.
// CHECK-LABEL: func.func @quant_2bit
// CHECK-NEXT: fm.param "model.layers.0.mlp.up_proj.weight"
// CHECK-SAME: {quant = #fm.quant<bits = 2, group = 64, grid = balanced, scale = f16>} : tensor<172x64xf32>
// CHECK-NEXT: fm.param "model.layers.0.mlp.down_proj.weight" from "model.safetensors"
// CHECK-SAME: {quant = #fm.quant<bits = 2, group = 32, grid = affine, scale = f32>} : tensor<64x160xf32>
func.func @quant_2bit() {
  %a = fm.param "model.layers.0.mlp.up_proj.weight" {quant = #fm.quant<bits = 2, group = 64, grid = balanced, scale = f16>} : tensor<172x64xf32>
  %b = fm.param "model.layers.0.mlp.down_proj.weight" from "model.safetensors" {quant = #fm.quant<bits = 2, group = 32, grid = affine, scale = f32>} : tensor<64x160xf32>
  return
}

// -----

// 4-bit: both grids, groups of 128 and 32, f16/f32/bf16 scales.
// CHECK-LABEL: func.func @quant_4bit
// CHECK-NEXT: {quant = #fm.quant<bits = 4, group = 128, grid = affine, scale = f16>} : tensor<64x256xf32>
// CHECK-NEXT: {quant = #fm.quant<bits = 4, group = 32, grid = balanced, scale = f32>} : tensor<64x96xf16>
// CHECK-NEXT: {quant = #fm.quant<bits = 4, group = 64, grid = affine, scale = bf16>} : tensor<64x64xbf16>
func.func @quant_4bit() {
  %a = fm.param "a" {quant = #fm.quant<bits = 4, group = 128, grid = affine, scale = f16>} : tensor<64x256xf32>
  %b = fm.param "b" {quant = #fm.quant<bits = 4, group = 32, grid = balanced, scale = f32>} : tensor<64x96xf16>
  %c = fm.param "c" {quant = #fm.quant<bits = 4, group = 64, grid = affine, scale = bf16>} : tensor<64x64xbf16>
  return
}

// -----

// 8-bit: groups of 128/64 on a 1-D parameter (the input dimension is the last one).
// CHECK-LABEL: func.func @quant_8bit
// CHECK-NEXT: {quant = #fm.quant<bits = 8, group = 128, grid = balanced, scale = f32>} : tensor<512x128xf32>
// CHECK-NEXT: {quant = #fm.quant<bits = 8, group = 64, grid = affine, scale = f16>} : tensor<192xf32>
func.func @quant_8bit() {
  %a = fm.param "lm_head.weight" {quant = #fm.quant<bits = 8, group = 128, grid = balanced, scale = f32>} : tensor<512x128xf32>
  %b = fm.param "bias" {quant = #fm.quant<bits = 8, group = 64, grid = affine, scale = f16>} : tensor<192xf32>
  return
}

// -----

// The quant attribute's fields may be written in any order; it prints them in declaration order.
// CHECK-LABEL: func.func @quant_field_order
// CHECK-NEXT: {quant = #fm.quant<bits = 4, group = 64, grid = balanced, scale = f16>} : tensor<8x64xf32>
func.func @quant_field_order() {
  %a = fm.param "a" {quant = #fm.quant<scale = f16, grid = balanced, group = 64, bits = 4>} : tensor<8x64xf32>
  return
}

// -----

// Parameters inside an fm.model feed the ops; a quantized weight feeds an MLP like any other.
// CHECK-LABEL: fm.model @quantized
// CHECK: %[[UP:.*]] = fm.param "model.layers.0.mlp.up_proj.weight" from "model.safetensors" {quant = #fm.quant<bits = 2, group = 64, grid = balanced, scale = f16>} : tensor<128x64xf32>
// CHECK: fm.mlp %{{.*}} gate(%{{.*}} : tensor<128x64xf32>) up(%[[UP]] : tensor<128x64xf32>)
fm.model @quantized attributes {family = "llama", vocab_size = 16 : i64, hidden_size = 64 : i64} {
  func.func @prefill(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %g = fm.param "model.layers.0.mlp.gate_proj.weight" from "model.safetensors" {quant = #fm.quant<bits = 2, group = 64, grid = balanced, scale = f16>} : tensor<128x64xf32>
    %u = fm.param "model.layers.0.mlp.up_proj.weight" from "model.safetensors" {quant = #fm.quant<bits = 2, group = 64, grid = balanced, scale = f16>} : tensor<128x64xf32>
    %d = fm.param "model.layers.0.mlp.down_proj.weight" from "model.safetensors" {quant = #fm.quant<bits = 2, group = 128, grid = balanced, scale = f16>} : tensor<64x128xf32>
    %y = fm.mlp %x gate(%g : tensor<128x64xf32>) up(%u : tensor<128x64xf32>) down(%d : tensor<64x128xf32>) {layer = 0 : i64, activation = #fm<activation swiglu>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %y : tensor<?x64xf32>
  }
}

// -----

// A weight stored f16 in the artifact (fm-quantize-weights float-storage=f16).
// CHECK-LABEL: func.func @f16_storage
// CHECK: fm.param "model.embed_tokens.weight" from "model.safetensors" {storage = f16} : tensor<16x64xbf16>
func.func @f16_storage() {
  %e = fm.param "model.embed_tokens.weight" from "model.safetensors" {storage = f16} : tensor<16x64xbf16>
  return
}
