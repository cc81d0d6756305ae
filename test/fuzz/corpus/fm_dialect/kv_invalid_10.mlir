// ... and every size is required.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  "fm.kv_cache"() <{sym_name = "kv", layers = 2 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, element_type = f32}> : () -> ()
}
