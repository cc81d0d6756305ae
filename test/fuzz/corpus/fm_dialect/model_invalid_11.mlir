"fm.model"() <{sym_name = "tiny", family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64}> ({
^bb0:
  "fm.kv_cache"() <{sym_name = "kv", layers = 1 : i64, kv_heads = 1 : i64, head_dim = 16 : i64, capacity = 8 : i64, element_type = f32}> : () -> ()
^bb1:
  "fm.kv_cache"() <{sym_name = "kv2", layers = 1 : i64, kv_heads = 1 : i64, head_dim = 16 : i64, capacity = 8 : i64, element_type = f32}> : () -> ()
}) : () -> ()
