// Round trip of the model structure: fm.model, fm.kv_cache (f32/f16/bf16/i8) and phase functions marked fm.phase (prefill, prefill_last, decode, encode).

// A model with its optional config and weights, an f32 cache and two phases.
fm.model @llama_tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64,
                                 config = {model_type = "llama", max_position_embeddings = 256 : i64},
                                 weights = "ckpt/llama-tiny"} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(256) : f32
  func.func @prefill(%tokens: tensor<?xi32>, %pos: index) -> tensor<?x128xf32> attributes {fm.phase = "prefill"} {
    %emb = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
    %x = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
    %l = fm.lm_head %x, %emb {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
    return %l : tensor<?x128xf32>
  }
  func.func @decode(%tokens: tensor<?xi32>, %pos: index) -> tensor<?x128xf32> attributes {fm.phase = "decode"} {
    %emb = fm.param "model.embed_tokens.weight" : tensor<128x64xf32>
    %x = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<128x64xf32> -> tensor<?x64xf32>
    %l = fm.lm_head %x, %emb {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
    return %l : tensor<?x128xf32>
  }
}
