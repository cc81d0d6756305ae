func.func @rms_norm_eps_zero(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = fm.param "norm" : tensor<64xf32>
  %n = fm.rms_norm %x, %w {eps = 0.0 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  return %n : tensor<?x64xf32>
}
