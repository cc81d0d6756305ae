// Bug 1: VitAttentionOp::verify tests "*getWindow() <= 0" on a uint64_t: window -3 is accepted on a 6x6 grid
// (6 % -3 == 0).
func.func @f(%x: tensor<37x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<37x32xf32> {
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = -3 : i64, grid = array<i64: 6, 6>, num_registers = 1 : i64} : tensor<37x32xf32> -> tensor<37x32xf32>
  return %a : tensor<37x32xf32>
}
