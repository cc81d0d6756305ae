func.func @layer_norm_result(%x: tensor<65x32xf32>, %w: tensor<32xf32>) -> tensor<?x32xf32> {
  %n = fm.layer_norm %x, %w, %w {eps = 1.0e-06 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<?x32xf32>
  return %n : tensor<?x32xf32>
}
