// Tied LM head: the weight is the embedding table's parameter (same key, even as a separate fm.param).
func.func @lm_head_tied(%tokens: tensor<?xi32>) -> tensor<?x128xf32> {
  %emb = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
  %l = fm.lm_head %x, %emb {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %emb2 = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %l2 = fm.lm_head %x, %emb2 {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %l2 : tensor<?x128xf32>
}
