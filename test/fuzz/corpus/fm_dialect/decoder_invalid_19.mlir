func.func @lm_head_weight_width(%x: tensor<?x64xf32>) -> tensor<?x128xf32> {
  %w = fm.param "lm_head.weight" : tensor<128x32xf32>
  %l = fm.lm_head %x, %w : tensor<?x64xf32>, tensor<128x32xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}
