// fm.vit_attention and fmk.vit_attention bound the window by the grid's larger side (a wider window is one window of mostly zero padding, and a huge one would wrap the kernels' window^2 token counts) and its padding by 4x the grid (a thin grid's larger side still allows mostly-padding windows).
// RUN: fm-opt %s -split-input-file -verify-diagnostics

func.func @fm_window_too_big(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 3: window 9 is larger than the 8x8 grid (at most its larger side)}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 3 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = 9 : i64, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @fm_window_huge(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: window 4294967297 is larger than the 8x8 grid (at most its larger side)}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = 4294967297 : i64, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

// The bound is the larger side: a window of 8 on a 4x8 grid (one row of
// windows, the height padded) and of 8 on 8x8 (one window) are fine.
func.func @fm_window_at_the_bound(%x: tensor<33x32xf32>, %y: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> (tensor<33x32xf32>, tensor<65x32xf32>) {
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = 8 : i64, grid = array<i64: 4, 8>, num_registers = 1 : i64} : tensor<33x32xf32> -> tensor<33x32xf32>
  %b = fm.vit_attention %y qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 1 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = 8 : i64, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a, %b : tensor<33x32xf32>, tensor<65x32xf32>
}

// -----

func.func @fmk_window_too_big(%qkv: tensor<65x96xf32>) -> tensor<65x32xf32> {
  // expected-error @+1 {{'fmk.vit_attention' op window 9 is larger than the 8x8 grid (at most its larger side)}}
  %a = fmk.vit_attention %qkv {num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, window = 9 : i64, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x96xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}

// -----

func.func @fmk_window_at_the_bound(%qkv: tensor<33x96xf32>) -> tensor<33x32xf32> {
  %a = fmk.vit_attention %qkv {num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, window = 8 : i64, grid = array<i64: 4, 8>, num_registers = 1 : i64} : tensor<33x96xf32> -> tensor<33x32xf32>
  return %a : tensor<33x32xf32>
}

// -----

// A thin grid: window 6 on 1x6 is at most the larger side, but its padding
// would be 6x the grid's positions.
func.func @fm_window_pads_thin_grid(%x: tensor<7x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<7x32xf32> {
  // expected-error @+1 {{'fm.vit_attention' op vit layer 0: window 6 pads the 1x6 grid to more than 4x its positions}}
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = 6 : i64, grid = array<i64: 1, 6>, num_registers = 1 : i64} : tensor<7x32xf32> -> tensor<7x32xf32>
  return %a : tensor<7x32xf32>
}

// -----

func.func @fmk_window_pads_thin_grid(%qkv: tensor<7x96xf32>) -> tensor<7x32xf32> {
  // expected-error @+1 {{'fmk.vit_attention' op window 6 pads the 1x6 grid to more than 4x its positions}}
  %a = fmk.vit_attention %qkv {num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, window = 6 : i64, grid = array<i64: 1, 6>, num_registers = 1 : i64} : tensor<7x96xf32> -> tensor<7x32xf32>
  return %a : tensor<7x32xf32>
}
