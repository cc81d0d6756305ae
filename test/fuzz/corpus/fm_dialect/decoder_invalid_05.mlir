// ODS: activations are 2-D f32 tensors (no batch dimension, no f16 activations).
func.func @embedding_result_3d(%t: tensor<?xi32>) -> tensor<1x?x64xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
  %x = fm.embedding %t, %e : tensor<?xi32>, tensor<128x64xf32> -> tensor<1x?x64xf32>
  return %x : tensor<1x?x64xf32>
}
