// Bug 1: same, kv_heads.
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(-1) head_dim(16) capacity(64) : f32
}
