// Bug 10 (missing rule): fm.kv_cache is accepted outside an fm.model. An fm.attention in a plain function then
// finds a module-level cache, and the model's KV plan check never runs (two layers writing slot 0 are accepted).
// 
fm.kv_cache @kv layers(1) kv_heads(2) head_dim(16) capacity(64) : f32
