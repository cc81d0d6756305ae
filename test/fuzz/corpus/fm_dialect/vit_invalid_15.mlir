func.func @layer_norm_eps(%x: tensor<65x32xf32>, %w: tensor<32xf32>) -> tensor<65x32xf32> {
  %n = fm.layer_norm %x, %w, %w {eps = 0.0 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x32xf32>
  return %n : tensor<65x32xf32>
}
