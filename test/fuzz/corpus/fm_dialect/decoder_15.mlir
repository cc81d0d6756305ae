// Untied LM head with its own weight.
func.func @lm_head_untied(%x: tensor<?x64xf32>) -> tensor<?x512xf32> {
  %w = fm.param "lm_head.weight" : tensor<512x64xf16>
  %l = fm.lm_head %x, %w : tensor<?x64xf32>, tensor<512x64xf16> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}
