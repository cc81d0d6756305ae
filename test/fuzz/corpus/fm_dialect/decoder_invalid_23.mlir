// ... of an embedding in the same function.
func.func @lm_head_tied_no_embedding(%x: tensor<?x64xf32>) -> tensor<?x128xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %l = fm.lm_head %x, %e {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}
