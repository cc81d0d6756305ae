func.func @adapter_result(%h: tensor<65x32xf32>, %pw: tensor<64x32xf32>, %pb: tensor<64xf32>, %cw: tensor<64x64x3x3xf32>, %cb: tensor<64xf32>) -> tensor<4x64xf32> {
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<64x32xf32>, tensor<64xf32>) conv(%cw, %cb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 8, 8>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 16 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
  return %t : tensor<4x64xf32>
}
