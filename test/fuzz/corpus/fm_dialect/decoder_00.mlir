// Round trip of the decoder ops: fm.embedding, fm.rms_norm, fm.add, every form of fm.attention, fm.mlp (swiglu/gelu), fm.take_last and fm.lm_head (tied/untied).

// Embedding, RMSNorm and the residual add, with a dynamic sequence length.
func.func @embed_norm_add(%tokens: tensor<?xi32>) -> tensor<?x64xf32> {
  %emb = fm.param "model.embed_tokens.weight" : tensor<128x64xbf16>
  %x = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<128x64xbf16> -> tensor<?x64xf32>
  %w = fm.param "model.layers.0.input_layernorm.weight" : tensor<64xf32>
  %n = fm.rms_norm %x, %w {eps = 1.0e-06 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %h = fm.add %x, %n : tensor<?x64xf32>
  return %h : tensor<?x64xf32>
}
