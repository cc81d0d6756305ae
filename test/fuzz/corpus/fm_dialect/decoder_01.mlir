// Static token counts: 8 tokens make 8 rows; a dynamic result also accepts them.
func.func @embed_static(%tokens: tensor<8xi32>) -> tensor<8x64xf32> {
  %emb = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %tokens, %emb : tensor<8xi32>, tensor<128x64xf32> -> tensor<8x64xf32>
  %y = fm.embedding %tokens, %emb : tensor<8xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
  %h = fm.add %x, %x : tensor<8x64xf32>
  return %h : tensor<8x64xf32>
}
