// The VL adapter: drops the register, projects 32 -> 64, 3x3 conv, pools the 8x8 grid to 2x2 = 4 tokens.
func.func @vl_adapter(%h: tensor<65x32xf32>) -> tensor<4x64xf32> {
  %pw = fm.param "adapter.proj.weight" : tensor<64x32xf32>
  %pb = fm.param "adapter.proj.bias" : tensor<64xf32>
  %cw = fm.param "adapter.conv.weight" : tensor<64x64x3x3xf32>
  %cb = fm.param "adapter.conv.bias" : tensor<64xf32>
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}
