// Diagnostics of the ViT encoder ops: fm.patch_embed, fm.register_tokens, fm.layer_norm, fm.vit_attention (grid, heads, window, relative positions, token count, weights), fm.drop_registers and fm.vl_adapter (grid, pooling, conv kernel, weights), with their ODS constraints.
// RUN: fm-opt %s -split-input-file -verify-diagnostics

func.func @patch_size_zero(%img: tensor<3x64x64xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'fm.patch_embed' op patch_embed: patch size must be positive}}
  %p = fm.patch_embed %img, %w, %b {patch_size = 0 : i64} : tensor<3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}

// -----

func.func @patch_weight_channels(%img: tensor<3x64x64xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %w = fm.param "vision.patch_embed.weight" : tensor<32x4x8x8xf32>
  // expected-error @+1 {{'fm.patch_embed' op patch_embed: weight has shape [32, 4, 8, 8], expected [dim, 3, 8, 8] (channels, patch 8)}}
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x64x64xf32>, tensor<32x4x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}

// -----

func.func @patch_weight_kernel(%img: tensor<3x64x64xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %w = fm.param "vision.patch_embed.weight" : tensor<32x3x16x16xf32>
  // expected-error @+1 {{'fm.patch_embed' op patch_embed: weight has shape [32, 3, 16, 16], expected [dim, 3, 8, 8] (channels, patch 8)}}
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x64x64xf32>, tensor<32x3x16x16xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}

// -----

// A linear patch projection must be given as the 4-D conv weight.
func.func @patch_weight_2d(%img: tensor<3x64x64xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %w = fm.param "vision.patch_embed.weight" : tensor<32x192xf32>
  // expected-error @+1 {{'fm.patch_embed' op patch_embed: weight has shape [32, 192], expected [dim, 3, 8, 8] (channels, patch 8)}}
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x64x64xf32>, tensor<32x192xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}

// -----

func.func @patch_image_not_whole(%img: tensor<3x60x64xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<56x32xf32> {
  // expected-error @+1 {{'fm.patch_embed' op patch_embed: image 60x64 is not a whole number of 8x8 patches}}
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x60x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<56x32xf32>
  return %p : tensor<56x32xf32>
}

// -----

func.func @patch_bias(%img: tensor<3x64x64xf32>, %w: tensor<32x3x8x8xf32>) -> tensor<64x32xf32> {
  %b = fm.param "vision.patch_embed.bias" : tensor<16xf32>
  // expected-error @+1 {{'fm.patch_embed' op patch_embed: bias weight 'vision.patch_embed.bias' has shape [16], expected [32] (embedding dim)}}
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<16xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}

// -----

// The position table covers the patches only (registers come later).
func.func @patch_pos(%img: tensor<3x64x64xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %pos = fm.param "vision.pos_embed" : tensor<65x32xf32>
  // expected-error @+1 {{'fm.patch_embed' op patch_embed: pos weight 'vision.pos_embed' has shape [65, 32], expected [64, 32] (patches x dim, or [1, 8, 8, dim])}}
  %p = fm.patch_embed %img, %w, %b pos(%pos : tensor<65x32xf32>) {patch_size = 8 : i64} : tensor<3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}

// -----

func.func @patch_result(%img: tensor<3x64x32xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'fm.patch_embed' op patch_embed: result must be [32, 32] (8x4 patches), got [64, 32]}}
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<3x64x32xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}

// -----

// ODS: the image is [C, H, W] f32, without a batch dimension.
func.func @patch_image_batched(%img: tensor<1x3x64x64xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'fm.patch_embed' op operand #0 must be 3D tensor of 32-bit float values, but got 'tensor<1x3x64x64xf32>'}}
  %p = fm.patch_embed %img, %w, %b {patch_size = 8 : i64} : tensor<1x3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}

// -----

func.func @patch_no_size(%img: tensor<3x64x64xf32>, %w: tensor<32x3x8x8xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'fm.patch_embed' op requires attribute 'patch_size'}}
  %p = fm.patch_embed %img, %w, %b : tensor<3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
  return %p : tensor<64x32xf32>
}

// -----

func.func @registers_width(%p: tensor<64x32xf32>) -> tensor<65x32xf32> {
  %reg = fm.param "vision.registers" : tensor<1x16xf32>
  // expected-error @+1 {{'fm.register_tokens' op register tokens must be [count, 32], got [1, 16]}}
  %r = fm.register_tokens %p, %reg : tensor<64x32xf32>, tensor<1x16xf32> -> tensor<65x32xf32>
  return %r : tensor<65x32xf32>
}

// -----

func.func @registers_1d(%p: tensor<64x32xf32>) -> tensor<65x32xf32> {
  %reg = fm.param "vision.registers" : tensor<32xf32>
  // expected-error @+1 {{'fm.register_tokens' op register tokens must be [count, 32], got [32]}}
  %r = fm.register_tokens %p, %reg : tensor<64x32xf32>, tensor<32xf32> -> tensor<65x32xf32>
  return %r : tensor<65x32xf32>
}

// -----

func.func @registers_result(%p: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %reg = fm.param "vision.registers" : tensor<4x32xf32>
  // expected-error @+1 {{'fm.register_tokens' op register_tokens: result must be [68, 32], got [64, 32]}}
  %r = fm.register_tokens %p, %reg : tensor<64x32xf32>, tensor<4x32xf32> -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

// -----

// A dynamic token count stays dynamic.
func.func @registers_result_dynamic(%p: tensor<?x32xf32>) -> tensor<65x32xf32> {
  %reg = fm.param "vision.registers" : tensor<1x32xf32>
  // expected-error @+1 {{'fm.register_tokens' op register_tokens: result must be [?, 32], got [65, 32]}}
  %r = fm.register_tokens %p, %reg : tensor<?x32xf32>, tensor<1x32xf32> -> tensor<65x32xf32>
  return %r : tensor<65x32xf32>
}

// -----

func.func @layer_norm_dynamic_width(%x: tensor<65x?xf32>, %w: tensor<32xf32>) -> tensor<65x?xf32> {
  // expected-error @+1 {{'fm.layer_norm' op layer_norm: the feature dimension must be static}}
  %n = fm.layer_norm %x, %w, %w {eps = 1.0e-06 : f64} : tensor<65x?xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x?xf32>
  return %n : tensor<65x?xf32>
}

// -----

func.func @layer_norm_eps(%x: tensor<65x32xf32>, %w: tensor<32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fm.layer_norm' op layer_norm: eps must be positive}}
  %n = fm.layer_norm %x, %w, %w {eps = 0.0 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x32xf32>
  return %n : tensor<65x32xf32>
}

// -----

func.func @layer_norm_weight(%x: tensor<65x32xf32>, %b: tensor<32xf32>) -> tensor<65x32xf32> {
  %w = fm.param "vision.blocks.0.norm1.weight" : tensor<16xf32>
  // expected-error @+1 {{'fm.layer_norm' op layer_norm: norm weight 'vision.blocks.0.norm1.weight' has shape [16], expected [32] (hidden size)}}
  %n = fm.layer_norm %x, %w, %b {eps = 1.0e-06 : f64} : tensor<65x32xf32>, tensor<16xf32>, tensor<32xf32> -> tensor<65x32xf32>
  return %n : tensor<65x32xf32>
}

// -----

func.func @layer_norm_bias(%x: tensor<65x32xf32>, %w: tensor<32xf32>) -> tensor<65x32xf32> {
  %b = fm.param "vision.blocks.0.norm1.bias" : tensor<64xf32>
  // expected-error @+1 {{'fm.layer_norm' op layer_norm: bias weight 'vision.blocks.0.norm1.bias' has shape [64], expected [32] (hidden size)}}
  %n = fm.layer_norm %x, %w, %b {eps = 1.0e-06 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<64xf32> -> tensor<65x32xf32>
  return %n : tensor<65x32xf32>
}

// -----

func.func @layer_norm_result(%x: tensor<65x32xf32>, %w: tensor<32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.layer_norm' op layer_norm: result type 'tensor<?x32xf32>' differs from the input type 'tensor<65x32xf32>'}}
  %n = fm.layer_norm %x, %w, %w {eps = 1.0e-06 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<?x32xf32>
  return %n : tensor<?x32xf32>
}

// -----

func.func @vit_grid_one_dim(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: grid must be two positive sizes}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 64>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_grid_zero(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: grid must be two positive sizes}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 0, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_heads_zero(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: num_heads and head_dim must be positive and num_registers non-negative}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 0 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_head_dim_negative(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: num_heads and head_dim must be positive and num_registers non-negative}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = -16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_registers_negative(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: num_heads and head_dim must be positive and num_registers non-negative}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = -1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_window_missing(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: window attention needs a window > 0}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_window_zero(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: window attention needs a window > 0}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = 0 : i64, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

// A window that does not tile the grid is fine (the grid is zero-padded), but
// a window layer's relative-position tables span the window.
func.func @vit_rel_pos_window(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  %rh = fm.param "vision.blocks.2.attn.rel_pos_h" : tensor<15x16xf32>
  %rw = fm.param "vision.blocks.2.attn.rel_pos_w" : tensor<15x16xf32>
  // expected-error @+1 {{'fm.vit_attention' op vit layer 2: rel_pos_h weight 'vision.blocks.2.attn.rel_pos_h' has shape [15, 16], expected [5, 16] (2 x window - 1 positions of head_dim)}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) rel_pos_h(%rh : tensor<15x16xf32>) rel_pos_w(%rw : tensor<15x16xf32>) {layer = 2 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = 3 : i64, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

// A global layer's tables span the grid.
func.func @vit_rel_pos_global(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  %rh = fm.param "rh" : tensor<15x16xf32>
  %rw = fm.param "rw" : tensor<15x8xf32>
  // expected-error @+1 {{'fm.vit_attention' op vit layer 1: rel_pos_w weight 'rw' has shape [15, 8], expected [15, 16] (2 x grid - 1 positions of head_dim (a global layer spans the grid))}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) rel_pos_h(%rh : tensor<15x16xf32>) rel_pos_w(%rw : tensor<15x8xf32>) {layer = 1 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_rel_pos_half(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  %rh = fm.param "rh" : tensor<15x16xf32>
  // expected-error @+1 {{'fm.vit_attention' op vit layer 1: relative positions need both rel_pos_h and rel_pos_w}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) rel_pos_h(%rh : tensor<15x16xf32>) {layer = 1 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @drop_registers_result(%x: tensor<65x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fm.drop_registers' op drop_registers: result must be [64, 32], got [65, 32]}}
  %p = fm.drop_registers %x {num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %p : tensor<65x32xf32>
}

// -----

func.func @drop_registers_too_many(%x: tensor<2x32xf32>) -> tensor<0x32xf32> {
  // expected-error @+1 {{'fm.drop_registers' op drop_registers: 2 tokens hold fewer than 3 registers}}
  %p = fm.drop_registers %x {num_registers = 3 : i64} : tensor<2x32xf32> -> tensor<0x32xf32>
  return %p : tensor<0x32xf32>
}

// -----

func.func @vit_global_with_window(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 1: global attention takes no window}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 1 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, window = 4 : i64, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_dynamic_width(%x: tensor<65x?xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x?xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: the feature dimension must be static}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x?xf32> -> tensor<65x?xf32>
  return %a : tensor<65x?xf32>
}

// -----

// The tokens are the registers followed by the grid.
func.func @vit_token_count(%x: tensor<64x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: 64 tokens, expected 1 registers + 8x8 patches}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<64x32xf32> -> tensor<64x32xf32>
  return %a : tensor<64x32xf32>
}

// -----

func.func @vit_qkv(%x: tensor<65x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  %qkv = fm.param "vision.blocks.0.attn.qkv.weight" : tensor<32x96xf32>
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: qkv weight 'vision.blocks.0.attn.qkv.weight' has shape [32, 96], expected [96, 32] (num_heads=2, head_dim=16)}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<32x96xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_o(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>) -> tensor<65x32xf32> {
  %o = fm.param "vision.blocks.0.attn.proj.weight" : tensor<32x64xf32>
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: o weight 'vision.blocks.0.attn.proj.weight' has shape [32, 64], expected [32, 32] (num_heads=2, head_dim=16)}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x64xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_qkv_bias(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  %qb = fm.param "vision.blocks.0.attn.qkv.bias" : tensor<32xf32>
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: qkv_bias weight 'vision.blocks.0.attn.qkv.bias' has shape [32], expected [96] (num_heads=2, head_dim=16)}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) qkv_bias(%qb : tensor<32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_o_bias(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  %ob = fm.param "vision.blocks.0.attn.proj.bias" : tensor<96xf32>
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: o_bias weight 'vision.blocks.0.attn.proj.bias' has shape [96], expected [32] (num_heads=2, head_dim=16)}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) o_bias(%ob : tensor<96xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_result(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: result type 'tensor<?x32xf32>' differs from the input type 'tensor<65x32xf32>'}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// -----

// ODS: the grid is an array<i64: h, w> and the mode an #fm<vit_attention ...>.
func.func @vit_grid_kind(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{attribute 'grid' failed to satisfy constraint: i64 dense array attribute}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = [8, 8], num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @vit_mode_kind(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{attribute 'mode' failed to satisfy constraint: ViT attention extent}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<attention local>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @adapter_grid(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: grid must be two positive sizes}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8, 1>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_grid_negative(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: grid must be two positive sizes}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, -8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_tokens_not_square(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: 48 image tokens is not a square number}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 48 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_tokens_zero(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: 0 image tokens is not a square number}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 0 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_tokens_negative(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: -4 image tokens is not a square number}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = -4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_cannot_pool(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: cannot pool the 8x8 patch grid to 9x9 tokens (the adapter grid must be at most the patch grid)}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 81 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_even_kernel(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: conv kernel must be odd, got 2}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 2 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_zero_kernel(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: conv kernel must be odd, got 0}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 0 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_negative_kernel(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: conv kernel must be odd, got -3}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = -3 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_dynamic_width(%h: tensor<65x?xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: the feature dimension must be static}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<65x?xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_token_count(%h: tensor<64x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: 64 tokens, expected 1 registers + 8x8 patches}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<64x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_projection(%h: tensor<65x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  %pw = fm.param "adapter.proj.weight" : tensor<64x16xf32>
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: projection has shape [64, 16], expected [lm_hidden, 32]}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x16xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_proj_bias(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  %pb = fm.param "adapter.proj.bias" : tensor<32xf32>
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: proj_bias weight 'adapter.proj.bias' has shape [32], expected [64] (lm_hidden)}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<32xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

// The conv weight follows conv_kernel.
func.func @adapter_conv(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  %cw = fm.param "adapter.conv.weight" : tensor<64x64x1x1xf32>
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: conv weight 'adapter.conv.weight' has shape [64, 64, 1, 1], expected [64, 64, 3, 3] (lm_hidden x lm_hidden x kernel x kernel)}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x1x1xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_conv_bias(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>) -> tensor<4x64xf32> {
  %cb = fm.param "adapter.conv.bias" : tensor<1x64xf32>
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: conv_bias weight 'adapter.conv.bias' has shape [1, 64], expected [64] (lm_hidden)}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<1x64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_result(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: result must be [16, 64], got [4, 64]}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 16 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_no_grid(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op requires attribute 'grid'}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}

// -----

func.func @adapter_grid_not_square(%h: tensor<49x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'fm.vl_adapter' op vl_adapter: the adapter pools a square patch grid, got 6x8}}
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 6, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<49x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}
