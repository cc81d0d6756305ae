func.func @embedding_width(%t: tensor<?xi32>) -> tensor<?x32xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %t, %e : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x32xf32>
  return %x : tensor<?x32xf32>
}
