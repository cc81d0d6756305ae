// Two decoder layers: a llama-style layer (separate q/k/v, half RoPE,
// window 4) and an afm7-style layer (fused qkv, interleaved RoPE, q/k norms,
// KV fake-quant), then a KV-reusing layer, the final norm and a tied head.
fm.model @two attributes {family = "afm7", hidden_size = 32 : i64, vocab_size = 48 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(1) head_dim(16) capacity(64) : f32
  func.func @prefill(%tokens: tensor<?xi32>, %pos: index) -> tensor<?x48xf32> attributes {fm.phase = "prefill"} {
    %emb = fm.param "emb" : tensor<48x32xf32>
    %nw = fm.param "norm" : tensor<32xf32>
    %wq = fm.param "q" : tensor<32x32xf32>
    %wk = fm.param "k" : tensor<16x32xf32>
    %wv = fm.param "v" : tensor<16x32xf32>
    %wo = fm.param "o" : tensor<32x32xf32>
    %wqkv = fm.param "qkv" : tensor<64x32xf32>
    %hn = fm.param "head_norm" : tensor<16xf32>
    %s = fm.param "scale" : tensor<f32>
    %g = fm.param "gate" : tensor<40x32xf32>
    %u = fm.param "up" : tensor<40x32xf32>
    %d = fm.param "down" : tensor<32x40xf32>
    %x = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<48x32xf32> -> tensor<?x32xf32>
    %n0 = fm.rms_norm %x, %nw {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
    %a0 = fm.attention %n0 at %pos q(%wq : tensor<32x32xf32>) k(%wk : tensor<16x32xf32>) v(%wv : tensor<16x32xf32>) o(%wo : tensor<32x32xf32>) cache @kv [0] {head_dim = 16 : i64, kind = #fm<attention local>, window = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope half>, rope_theta = 1.0e+04 : f64, scale = 2.5e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
    %x1 = fm.add %x, %a0 : tensor<?x32xf32>
    %m0 = fm.rms_norm %x1, %nw {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
    %f0 = fm.mlp %m0 gate(%g : tensor<40x32xf32>) up(%u : tensor<40x32xf32>) down(%d : tensor<32x40xf32>) {activation = #fm<activation swiglu>, layer = 0 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
    %x2 = fm.add %x1, %f0 : tensor<?x32xf32>
    %n1 = fm.rms_norm %x2, %nw {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
    %a1 = fm.attention %n1 at %pos qkv(%wqkv : tensor<64x32xf32>) o(%wo : tensor<32x32xf32>) q_norm(%hn : tensor<16xf32>) k_norm(%hn : tensor<16xf32>) k_scale(%s : tensor<f32>) v_scale(%s : tensor<f32>) cache @kv [1] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, qk_norm_eps = 1.0e-05 : f64, rope = #fm<rope interleaved>, rope_theta = 5.0e+05 : f64, scale = 2.5e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
    %x3 = fm.add %x2, %a1 : tensor<?x32xf32>
    %n2 = fm.rms_norm %x3, %nw {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
    %a2 = fm.attention %n2 at %pos q(%wq : tensor<32x32xf32>) o(%wo : tensor<32x32xf32>) q_norm(%hn : tensor<16xf32>) reuse cache @kv [1] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 2 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, qk_norm_eps = 1.0e-05 : f64, rope = #fm<rope interleaved>, rope_theta = 5.0e+05 : f64, scale = 2.5e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
    %x4 = fm.add %x3, %a2 : tensor<?x32xf32>
    %n3 = fm.rms_norm %x4, %nw {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
    %l = fm.lm_head %n3, %emb {tied} : tensor<?x32xf32>, tensor<48x32xf32> -> tensor<?x48xf32>
    return %l : tensor<?x48xf32>
  }
}
