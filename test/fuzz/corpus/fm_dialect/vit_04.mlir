// Global ViT attention with biases over 1 register + an 8x8 grid.
func.func @vit_attention_global(%x: tensor<65x32xf32>) -> tensor<65x32xf32> {
  %qkv = fm.param "qkv.weight" : tensor<96x32xf32>
  %qkvb = fm.param "qkv.bias" : tensor<96xf32>
  %o = fm.param "proj.weight" : tensor<32x32xf32>
  %ob = fm.param "proj.bias" : tensor<32xf32>
  %a = fm.vit_attention %x qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) qkv_bias(%qkvb : tensor<96xf32>) o_bias(%ob : tensor<32xf32>) {layer = 1 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention global>, grid = array<i64: 8, 8>, num_registers = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
  return %a : tensor<65x32xf32>
}
