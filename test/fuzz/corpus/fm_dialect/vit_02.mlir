// LayerNorm with weight and bias, static and dynamic token counts.
func.func @layer_norm(%x: tensor<65x32xf32>, %y: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %w = fm.param "norm.weight" : tensor<32xf32>
  %b = fm.param "norm.bias" : tensor<32xf32>
  %n = fm.layer_norm %x, %w, %b {eps = 1.0e-06 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x32xf32>
  %w16 = fm.param "norm16.weight" : tensor<32xf16>
  %b16 = fm.param "norm16.bias" : tensor<32xf16>
  %m = fm.layer_norm %y, %w16, %b16 {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf16>, tensor<32xf16> -> tensor<?x32xf32>
  return %m : tensor<?x32xf32>
}
