// Round trip of the ViT encoder ops: fm.patch_embed (with/without pos), fm.layer_norm, fm.register_tokens, fm.vit_attention (global/window, registers) and fm.vl_adapter.
// RUN: fm-opt %s -split-input-file | fm-opt -split-input-file | FileCheck %s
// RUN: fm-opt %s -split-input-file > %t.1 && fm-opt %t.1 -split-input-file > %t.2 && diff %t.1 %t.2

// Patch embedding with an absolute position table: 64x64 image, 8x8 patches -> 64 tokens.
// CHECK-LABEL: func.func @patch_embed_pos
// CHECK: %[[POS:.*]] = fm.param "vision.pos_embed" : tensor<64x32xf32>
// CHECK-NEXT: fm.patch_embed %{{.*}}, %{{.*}}, %{{.*}} pos(%[[POS]] : tensor<64x32xf32>) {patch_size = 8 : i64} : tensor<3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
func.func @patch_embed_pos(%image: tensor<3x64x64xf32>) -> tensor<64x32xf32> {
  %w = fm.param "vision.patch_embed.weight" : tensor<32x3x8x8xf32>
  %b = fm.param "vision.patch_embed.bias" : tensor<32xf32>
  %pos = fm.param "vision.pos_embed" : tensor<64x32xf32>
  %p = fm.patch_embed %image, %w, %b pos(%pos : tensor<64x32xf32>) {patch_size = 8 : i64} : tensor<3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}

// -----

// Patch embedding without pos, on a non-square image (224x160 in 16x16 patches = 14x10 = 140 tokens), bf16 weights.
// CHECK-LABEL: func.func @patch_embed_no_pos
// CHECK: fm.patch_embed %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {patch_size = 16 : i64} : tensor<3x224x160xf32>, tensor<64x3x16x16xbf16>, tensor<64xbf16> -> tensor<140x64xf32>
// CHECK-NOT: pos(
func.func @patch_embed_no_pos(%image: tensor<3x224x160xf32>) -> tensor<140x64xf32> {
  %w = fm.param "w" : tensor<64x3x16x16xbf16>
  %b = fm.param "b" : tensor<64xbf16>
  %p = fm.patch_embed %image, %w, %b {patch_size = 16 : i64} : tensor<3x224x160xf32>, tensor<64x3x16x16xbf16>, tensor<64xbf16> -> tensor<140x64xf32>
  return %p : tensor<140x64xf32>
}

// -----

// LayerNorm with weight and bias, static and dynamic token counts.
// CHECK-LABEL: func.func @layer_norm
// CHECK: fm.layer_norm %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {eps = 9.9999999999999995E-7 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x32xf32>
// CHECK: fm.layer_norm %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {eps = 1.000000e-05 : f64} : tensor<?x32xf32>, tensor<32xf16>, tensor<32xf16> -> tensor<?x32xf32>
func.func @layer_norm(%x: tensor<65x32xf32>, %y: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %w = fm.param "norm.weight" : tensor<32xf32>
  %b = fm.param "norm.bias" : tensor<32xf32>
  %n = fm.layer_norm %x, %w, %b {eps = 1.0e-06 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x32xf32>
  %w16 = fm.param "norm16.weight" : tensor<32xf16>
  %b16 = fm.param "norm16.bias" : tensor<32xf16>
  %m = fm.layer_norm %y, %w16, %b16 {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf16>, tensor<32xf16> -> tensor<?x32xf32>
  return %m : tensor<?x32xf32>
}

// -----

// Register tokens prepended: 64 patches + 1 register = 65 tokens; 4 registers on a dynamic count stay dynamic.
// CHECK-LABEL: func.func @register_tokens
// CHECK: fm.register_tokens %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<64x32xf32>, tensor<1x32xf32> -> tensor<65x32xf32>
// CHECK: fm.register_tokens %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<?x32xf32>, tensor<4x32xf32> -> tensor<?x32xf32>
func.func @register_tokens(%p: tensor<64x32xf32>, %q: tensor<?x32xf32>) -> (tensor<65x32xf32>, tensor<?x32xf32>) {
  %reg = fm.param "vision.registers" : tensor<1x32xf32>
  %r = fm.register_tokens %p, %reg : tensor<64x32xf32>, tensor<1x32xf32> -> tensor<65x32xf32>
  %reg4 = fm.param "vision.registers4" : tensor<4x32xf32>
  %s = fm.register_tokens %q, %reg4 : tensor<?x32xf32>, tensor<4x32xf32> -> tensor<?x32xf32>
  return %r, %s : tensor<65x32xf32>, tensor<?x32xf32>
}

// -----

// Global ViT attention with biases over 1 register + an 8x8 grid.
// CHECK-LABEL: func.func @vit_attention_global
// CHECK: fm.vit_attention %{{[a-z0-9_]+}} qkv(%{{[a-z0-9_]+}} : tensor<96x32xf32>) o(%{{[a-z0-9_]+}} : tensor<32x32xf32>) qkv_bias(%{{[a-z0-9_]+}} : tensor<96xf32>) o_bias(%{{[a-z0-9_]+}} : tensor<32xf32>)
// CHECK-SAME: {grid = array<i64: 8, 8>, head_dim = 16 : i64, layer = 1 : i64, mode = #fm<vit_attention global>, num_heads = 2 : i64, num_registers = 1 : i64, scale = 2.500000e-01 : f64}
// CHECK-SAME: : tensor<65x32xf32> -> tensor<65x32xf32>
func.func @vit_attention_global(%x: tensor<65x32xf32>) -> tensor<65x32xf32> {
  %qkv = fm.param "qkv.weight" : tensor<96x32xf32>
  %qkvb = fm.param "qkv.bias" : tensor<96xf32>
  %o = fm.param "proj.weight" : tensor<32x32xf32>
  %ob = fm.param "proj.bias" : tensor<32xf32>
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) qkv_bias(%qkvb : tensor<96xf32>) o_bias(%ob : tensor<32xf32>) {layer = 1 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

// Register-Window attention: 4x4 windows tile the 8x8 grid, 1 register; and a window layer without
// biases, without registers, on a non-square 4x8 grid with 2x2 windows and a dynamic token count.
// CHECK-LABEL: func.func @vit_attention_window
// CHECK: fm.vit_attention %{{[a-z0-9_]+}} qkv(%{{[a-z0-9_]+}} : tensor<96x32xf32>) o(%{{[a-z0-9_]+}} : tensor<32x32xf32>) {grid = array<i64: 8, 8>, head_dim = 16 : i64, layer = 0 : i64, mode = #fm<vit_attention window>, num_heads = 2 : i64, num_registers = 1 : i64, scale = 2.500000e-01 : f64, window = 4 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
// CHECK: fm.vit_attention
// CHECK-SAME: {grid = array<i64: 4, 8>, head_dim = 8 : i64, layer = 2 : i64, mode = #fm<vit_attention window>, num_heads = 4 : i64, num_registers = 0 : i64, scale = 3.535500e-01 : f64, window = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
func.func @vit_attention_window(%x: tensor<65x32xf32>, %y: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %qkv = fm.param "qkv.weight" : tensor<96x32xf32>
  %o = fm.param "proj.weight" : tensor<32x32xf32>
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = 4 : i64, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  %b = fm.vit_attention %y qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 2 : i64, num_heads = 4 : i64, head_dim = 8 : i64, scale = 0.35355 : f64, mode = #fm<vit_attention window>, window = 2 : i64, grid = array<i64: 4, 8>, num_registers = 0 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %b : tensor<?x32xf32>
}

// -----

// The VL adapter: drops the register, projects 32 -> 64, 3x3 conv, pools the 8x8 grid to 2x2 = 4 tokens.
// CHECK-LABEL: func.func @vl_adapter
// CHECK: fm.vl_adapter %{{[a-z0-9_]+}} proj(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<64x32xf32>, tensor<64xf32>) conv(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<64x64x3x3xf32>, tensor<64xf32>)
// CHECK-SAME: {conv_kernel = 3 : i64, grid = array<i64: 8, 8>, num_registers = 1 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
func.func @vl_adapter(%h: tensor<65x32xf32>) -> tensor<4x64xf32> {
  %pw = fm.param "adapter.proj.weight" : tensor<64x32xf32>
  %pb = fm.param "adapter.proj.bias" : tensor<64xf32>
  %cw = fm.param "adapter.conv.weight" : tensor<64x64x3x3xf32>
  %cb = fm.param "adapter.conv.bias" : tensor<64xf32>
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

// A 1x1 conv adapter with no registers, a dynamic token count and no pooling (16 tokens from a 4x4 grid).
// CHECK-LABEL: func.func @vl_adapter_1x1
// CHECK: fm.vl_adapter {{.*}} conv(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<48x48x1x1xf16>, tensor<48xf16>)
// CHECK-SAME: {conv_kernel = 1 : i64, grid = array<i64: 4, 4>, num_registers = 0 : i64, num_tokens = 16 : i64} : tensor<?x32xf32> -> tensor<16x48xf32>
func.func @vl_adapter_1x1(%h: tensor<?x32xf32>) -> tensor<16x48xf32> {
  %pw = fm.param "pw" : tensor<48x32xf16>
  %pb = fm.param "pb" : tensor<48xf16>
  %cw = fm.param "cw" : tensor<48x48x1x1xf16>
  %cb = fm.param "cb" : tensor<48xf16>
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<48x32xf16>, tensor<48xf16>) conv(%cw, %cb : tensor<48x48x1x1xf16>, tensor<48xf16>) {grid = array<i64: 4, 4>, num_registers = 0 : i64, conv_kernel = 1 : i64, num_tokens = 16 : i64} : tensor<?x32xf32> -> tensor<16x48xf32>
  return %t : tensor<16x48xf32>
}

// -----

// A whole (tiny) encoder as an fm.model "encode_image" phase: patches, register, norm, window attention, residual, adapter.
// CHECK-LABEL: fm.model @vit_tiny
// CHECK: func.func @encode
// CHECK-SAME: attributes {fm.phase = "encode_image"}
// CHECK: fm.patch_embed
// CHECK-NEXT: fm.param "vision.registers"
// CHECK-NEXT: fm.register_tokens
// CHECK: fm.layer_norm
// CHECK: fm.vit_attention {{.*}}mode = #fm<vit_attention window>
// CHECK-NEXT: fm.add
// CHECK: fm.vl_adapter
fm.model @vit_tiny attributes {family = "vit", vocab_size = 1 : i64, hidden_size = 32 : i64} {
  func.func @encode(%image: tensor<3x32x32xf32>) -> tensor<4x64xf32> attributes {fm.phase = "encode_image"} {
    %pw = fm.param "vision.patch_embed.weight" : tensor<32x3x8x8xf32>
    %pb = fm.param "vision.patch_embed.bias" : tensor<32xf32>
    %p = fm.patch_embed %image, %pw, %pb {patch_size = 8 : i64} : tensor<3x32x32xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<16x32xf32>
    %reg = fm.param "vision.registers" : tensor<1x32xf32>
    %x = fm.register_tokens %p, %reg : tensor<16x32xf32>, tensor<1x32xf32> -> tensor<17x32xf32>
    %nw = fm.param "vision.blocks.0.norm1.weight" : tensor<32xf32>
    %nb = fm.param "vision.blocks.0.norm1.bias" : tensor<32xf32>
    %n = fm.layer_norm %x, %nw, %nb {eps = 1.0e-06 : f64} : tensor<17x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<17x32xf32>
    %qkv = fm.param "vision.blocks.0.attn.qkv.weight" : tensor<96x32xf32>
    %o = fm.param "vision.blocks.0.attn.proj.weight" : tensor<32x32xf32>
    %a = fm.vit_attention %n qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = 2 : i64, grid = array<i64: 4, 4>, num_registers = 1 : i64} : tensor<17x32xf32> -> tensor<17x32xf32>
    %h = fm.add %x, %a : tensor<17x32xf32>
    %apw = fm.param "adapter.proj.weight" : tensor<64x32xf32>
    %apb = fm.param "adapter.proj.bias" : tensor<64xf32>
    %acw = fm.param "adapter.conv.weight" : tensor<64x64x3x3xf32>
    %acb = fm.param "adapter.conv.bias" : tensor<64xf32>
    %t = fm.vl_adapter %h proj(%apw, %apb : tensor<64x32xf32>, tensor<64xf32>) conv(%acw, %acb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 4, 4>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<17x32xf32> -> tensor<4x64xf32>
    return %t : tensor<4x64xf32>
  }
}
