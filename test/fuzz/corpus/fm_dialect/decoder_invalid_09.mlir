func.func @rms_norm_weight(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = fm.param "model.layers.0.input_layernorm.weight" : tensor<32xf32>
  %n = fm.rms_norm %x, %w {eps = 1.0e-05 : f64} : tensor<?x64xf32>, tensor<32xf32> -> tensor<?x64xf32>
  return %n : tensor<?x64xf32>
}
