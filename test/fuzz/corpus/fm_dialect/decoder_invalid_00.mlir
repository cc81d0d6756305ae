// Diagnostics of the decoder ops outside attention and the MLP: fm.embedding, fm.rms_norm, fm.add, fm.take_last and fm.lm_head (verifiers and ODS constraints).

func.func @embedding_table_1d(%t: tensor<?xi32>) -> tensor<?x64xf32> {
  %e = fm.param "model.embed_tokens.weight" : tensor<8192xf32>
  %x = fm.embedding %t, %e : tensor<?xi32>, tensor<8192xf32> -> tensor<?x64xf32>
  return %x : tensor<?x64xf32>
}
