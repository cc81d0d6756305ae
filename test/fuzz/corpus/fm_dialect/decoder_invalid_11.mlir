// ODS: eps is an f64 and is required.
func.func @rms_norm_eps_f32(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = fm.param "norm" : tensor<64xf32>
  %n = fm.rms_norm %x, %w {eps = 1.0e-05 : f32} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  return %n : tensor<?x64xf32>
}
