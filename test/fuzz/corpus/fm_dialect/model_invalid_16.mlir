// fm.phase marks a function, not another op ...
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(16) capacity(8) {fm.phase = "decode"} : f32
}
