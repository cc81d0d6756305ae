// An int8 KV cache (afm7): the cache is declared i8.
fm.model @afm7_i8 attributes {family = "afm7", vocab_size = 1024 : i64, hidden_size = 256 : i64} {
  fm.kv_cache @kv layers(35) kv_heads(2) head_dim(128) capacity(4096) : i8
}
