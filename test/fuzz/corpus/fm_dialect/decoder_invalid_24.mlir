// ODS: tied is a unit attribute.
func.func @lm_head_tied_bool(%t: tensor<?xi32>) -> tensor<?x128xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %t, %e : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
  %l = fm.lm_head %x, %e {tied = true} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}
