func.func @vit_result(%x: tensor<65x32xf32>, %qkv: tensor<96x32xf32>, %o: tensor<32x32xf32>) -> tensor<?x32xf32> {
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}
