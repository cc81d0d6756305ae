func.func @lm_head_weight_1d(%x: tensor<?x64xf32>) -> tensor<?x128xf32> {
  %w = fm.param "lm_head.weight" : tensor<64xf32>
  %l = fm.lm_head %x, %w : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}
