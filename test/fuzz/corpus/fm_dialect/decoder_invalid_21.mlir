func.func @lm_head_logits_width(%x: tensor<?x64xf32>) -> tensor<?x100xf32> {
  %w = fm.param "lm_head.weight" : tensor<128x64xf32>
  %l = fm.lm_head %x, %w : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x100xf32>
  return %l : tensor<?x100xf32>
}
