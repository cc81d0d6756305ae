func.func @embedding_rows(%t: tensor<5xi32>) -> tensor<6x64xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %t, %e : tensor<5xi32>, tensor<128x64xf32> -> tensor<6x64xf32>
  return %x : tensor<6x64xf32>
}
