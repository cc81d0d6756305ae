func.func @rms_norm_dynamic_width(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %w = fm.param "norm" : tensor<64xf32>
  %n = fm.rms_norm %x, %w {eps = 1.0e-05 : f64} : tensor<?x?xf32>, tensor<64xf32> -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}
