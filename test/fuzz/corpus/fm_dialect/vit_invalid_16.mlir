func.func @layer_norm_weight(%x: tensor<65x32xf32>, %b: tensor<32xf32>) -> tensor<65x32xf32> {
  %w = fm.param "vision.blocks.0.norm1.weight" : tensor<16xf32>
  %n = fm.layer_norm %x, %w, %b {eps = 1.0e-06 : f64} : tensor<65x32xf32>, tensor<16xf32>, tensor<32xf32> -> tensor<65x32xf32>
  return %n : tensor<65x32xf32>
}
