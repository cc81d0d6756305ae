// Register-Window attention: 4x4 windows tile the 8x8 grid, 1 register; and a window layer without
// biases, without registers, on a non-square 4x8 grid with 2x2 windows and a dynamic token count.
func.func @vit_attention_window(%x: tensor<65x32xf32>, %y: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %qkv = fm.param "qkv.weight" : tensor<96x32xf32>
  %o = fm.param "proj.weight" : tensor<32x32xf32>
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = 4 : i64, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  %b = fm.vit_attention %y qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 2 : i64, num_heads = 4 : i64, head_dim = 8 : i64, scale = 0.35355 : f64, mode = #fm<vit_attention window>, window = 2 : i64, grid = array<i64: 4, 8>, num_registers = 0 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %b : tensor<?x32xf32>
}
