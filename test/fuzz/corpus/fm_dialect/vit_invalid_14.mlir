func.func @layer_norm_dynamic_width(%x: tensor<65x?xf32>, %w: tensor<32xf32>) -> tensor<65x?xf32> {
  %n = fm.layer_norm %x, %w, %w {eps = 1.0e-06 : f64} : tensor<65x?xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x?xf32>
  return %n : tensor<65x?xf32>
}
