// Bug 6 (bad message): a dynamic result width is printed as the raw kDynamic value: "embedding of width 64 cannot
// produce activations of width -9223372036854775808". 
func.func @f(%t: tensor<?xi32>) -> tensor<?x?xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %t, %e : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x?xf32>
  return %x : tensor<?x?xf32>
}
