// ODS: token ids are a 1-D i32 tensor.
func.func @embedding_tokens_i64(%t: tensor<?xi64>) -> tensor<?x64xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %t, %e : tensor<?xi64>, tensor<128x64xf32> -> tensor<?x64xf32>
  return %x : tensor<?x64xf32>
}
