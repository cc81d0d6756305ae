func.func @embedding_tokens_2d(%t: tensor<1x?xi32>) -> tensor<?x64xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %t, %e : tensor<1x?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
  return %x : tensor<?x64xf32>
}
