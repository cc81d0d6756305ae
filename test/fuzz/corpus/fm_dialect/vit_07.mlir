// A 1x1 conv adapter with no registers, a dynamic token count and no pooling (16 tokens from a 4x4 grid).
func.func @vl_adapter_1x1(%h: tensor<?x32xf32>) -> tensor<16x48xf32> {
  %pw = fm.param "pw" : tensor<48x32xf16>
  %pb = fm.param "pb" : tensor<48xf16>
  %cw = fm.param "cw" : tensor<48x48x1x1xf16>
  %cb = fm.param "cb" : tensor<48xf16>
  %t = fm.vl_adapter %h proj(%pw, %pb : tensor<48x32xf16>, tensor<48xf16>) conv(%cw, %cb : tensor<48x48x1x1xf16>, tensor<48xf16>) {grid = array<i64: 4, 4>, num_registers = 0 : i64, conv_kernel = 1 : i64, num_tokens = 16 : i64} : tensor<?x32xf32> -> tensor<16x48xf32>
  return %t : tensor<16x48xf32>
}
