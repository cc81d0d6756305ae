// A tied head must use the embedding table's parameter ...
func.func @lm_head_tied_other_param(%t: tensor<?xi32>) -> tensor<?x128xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %t, %e : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
  %w = fm.param "lm_head.weight" : tensor<128x64xf32>
  %l = fm.lm_head %x, %w {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}
