// Half-precision caches, several per model (one per track in pt_moe).
fm.model @half_caches attributes {family = "pt_moe", vocab_size = 100 : i64, hidden_size = 32 : i64} {
  fm.kv_cache @kv_f16 layers(4) kv_heads(8) head_dim(64) capacity(2048) : f16
  fm.kv_cache @kv_bf16 layers(1) kv_heads(1) head_dim(2) capacity(1) : bf16
}
