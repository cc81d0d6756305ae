// Diagnostics of KV caches: fm.kv_cache's verifier and ODS, the cache an fm.attention names (existence, slot range, head layout, int8 scales), and the model's KV plan (one writer per slot, reuse of an earlier writer).

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(0) kv_heads(2) head_dim(16) capacity(64) : f32
}
