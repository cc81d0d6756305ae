// Diagnostics of fm.attention's own verifier (head counts, scale, RoPE, window, projections, reuse, KV fake-quant, q/k norms, weight shapes) and its ODS constraints.
// RUN: fm-opt %s -split-input-file -verify-diagnostics

// Every attention case sits in a model whose cache @kv matches it (2 KV heads of 16), so
// only the rule under test fires. Hidden size 64, 4 query heads of 16.

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: num_heads (0), num_kv_heads (2) and head_dim (16) must be positive}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 0 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: num_heads (4), num_kv_heads (0) and head_dim (16) must be positive}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 0 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: num_heads (4), num_kv_heads (2) and head_dim (-16) must be positive}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = -16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 5: 8 query heads cannot be grouped over 3 KV heads}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 5 : i64, num_heads = 8 : i64, num_kv_heads = 3 : i64, head_dim = 8 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: attention scale must be positive}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.0 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: attention scale must be positive}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = -0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: rope_theta given without RoPE}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, rope_theta = 1.0e+04 : f64, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: RoPE needs a positive rope_theta}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope half>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: RoPE needs a positive rope_theta}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope interleaved>, rope_theta = 0.0 : f64, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 18 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(9) capacity(64) : f32
  func.func @prefill(%x: tensor<?x18xf32>, %pos: index, %qkv: tensor<36x18xf32>, %o: tensor<18x18xf32>) -> tensor<?x18xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: RoPE needs an even head_dim, got 9}}
    %a = fm.attention %x at %pos qkv(%qkv : tensor<36x18xf32>) o(%o : tensor<18x18xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 9 : i64, scale = 0.33 : f64, rope = #fm<rope half>, rope_theta = 1.0e+04 : f64, kind = #fm<attention global>} : tensor<?x18xf32> -> tensor<?x18xf32>
    return %a : tensor<?x18xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: local attention needs a window > 0, got 0}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention local>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 3: local attention needs a window > 0, got 0}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 3 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention local>, window = 0 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: global attention takes no window}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>, window = 128 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: has both a q and a fused qkv projection}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: needs a q or a fused qkv projection}}
    %a = fm.attention %x at %pos k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// A layer that owns its slot needs K and V projections (or the fused qkv).
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: owns a KV cache slot but has no K/V projection}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: owns a KV cache slot but has no K/V projection}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// A reusing layer (KV sharing) must not carry any K/V weight: one case per weight.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 2 reuses the KV cache of an earlier layer and must not have its own K/V weights (found k)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) reuse cache @kv [0] {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 2 reuses the KV cache of an earlier layer and must not have its own K/V weights (found v)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) reuse cache @kv [0] {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 2 reuses the KV cache of an earlier layer and must not have its own K/V weights (found qkv)}}
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) reuse cache @kv [0] {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %kb = fm.param "k_bias" : tensor<32xf32>
    // expected-error @+1 {{layer 2 reuses the KV cache of an earlier layer and must not have its own K/V weights (found k_bias)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) k_bias(%kb : tensor<32xf32>) reuse cache @kv [0] {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %vb = fm.param "v_bias" : tensor<32xf32>
    // expected-error @+1 {{layer 2 reuses the KV cache of an earlier layer and must not have its own K/V weights (found v_bias)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) v_bias(%vb : tensor<32xf32>) reuse cache @kv [0] {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %kn = fm.param "k_norm" : tensor<16xf32>
    // expected-error @+1 {{layer 2 reuses the KV cache of an earlier layer and must not have its own K/V weights (found k_norm)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) k_norm(%kn : tensor<16xf32>) reuse cache @kv [0] {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>, qk_norm_eps = 1.0e-05 : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %ks = fm.param "ks" : tensor<f32>
    %vs = fm.param "vs" : tensor<f32>
    // expected-error @+1 {{layer 2 reuses the KV cache of an earlier layer and must not have its own K/V weights (found k_scale)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) k_scale(%ks : tensor<f32>) v_scale(%vs : tensor<f32>) reuse cache @kv [0] {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %vs = fm.param "vs" : tensor<f32>
    // expected-error @+1 {{layer 2 reuses the KV cache of an earlier layer and must not have its own K/V weights (found v_scale)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) v_scale(%vs : tensor<f32>) reuse cache @kv [0] {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %ks = fm.param "ks" : tensor<f32>
    // expected-error @+1 {{layer 0: KV fake-quant needs both k_scale and v_scale}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) k_scale(%ks : tensor<f32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %vs = fm.param "vs" : tensor<f32>
    // expected-error @+1 {{layer 0: KV fake-quant needs both k_scale and v_scale}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) v_scale(%vs : tensor<f32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %qn = fm.param "q_norm" : tensor<16xf32>
    // expected-error @+1 {{layer 0: q/k norms need qk_norm_eps}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) q_norm(%qn : tensor<16xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %kn = fm.param "k_norm" : tensor<16xf32>
    // expected-error @+1 {{layer 0: q/k norms need qk_norm_eps}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) k_norm(%kn : tensor<16xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x?xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>) -> tensor<?x?xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: the feature dimension must be static}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x?xf32> -> tensor<?x?xf32>
    return %a : tensor<?x?xf32>
  }
}

// -----

// Weight shapes: each message names the parameter and the config quantities behind the expected shape.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %wq = fm.param "model.layers.0.self_attn.q_proj.weight" : tensor<32x64xf32>
    // expected-error @+1 {{layer 0: q weight 'model.layers.0.self_attn.q_proj.weight' has shape [32, 64], expected [64, 64] (num_heads=4, head_dim=16)}}
    %a = fm.attention %x at %pos q(%wq : tensor<32x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %wk = fm.param "model.layers.0.self_attn.k_proj.weight" : tensor<64x64xf32>
    // expected-error @+1 {{layer 0: k weight 'model.layers.0.self_attn.k_proj.weight' has shape [64, 64], expected [32, 64] (num_kv_heads=2, head_dim=16)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%wk : tensor<64x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %wv = fm.param "model.layers.0.self_attn.v_proj.weight" : tensor<32x32xf32>
    // expected-error @+1 {{layer 0: v weight 'model.layers.0.self_attn.v_proj.weight' has shape [32, 32], expected [32, 64] (num_kv_heads=2, head_dim=16)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%wv : tensor<32x32xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %w = fm.param "model.layers.0.self_attn.qkv_proj.weight" : tensor<192x64xf32>
    // expected-error @+1 {{layer 0: qkv weight 'model.layers.0.self_attn.qkv_proj.weight' has shape [192, 64], expected [128, 64] ((num_heads + 2 * num_kv_heads) * head_dim with num_heads=4, head_dim=16, num_kv_heads=2)}}
    %a = fm.attention %x at %pos qkv(%w : tensor<192x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// o projects the heads back: [hidden, num_heads * head_dim]. A transposed o is caught (here as a function argument: no name).
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %qkv: tensor<128x64xf32>, %o: tensor<64x32xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: o weight has shape [64, 32], expected [64, 64] (num_heads=4, head_dim=16)}}
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x32xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %qb = fm.param "q_bias" : tensor<32xf32>
    // expected-error @+1 {{layer 0: q_bias weight 'q_bias' has shape [32], expected [64] (num_heads=4, head_dim=16)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) q_bias(%qb : tensor<32xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %kb = fm.param "k_bias" : tensor<64xf32>
    // expected-error @+1 {{layer 0: k_bias weight 'k_bias' has shape [64], expected [32] (num_kv_heads=2, head_dim=16)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) k_bias(%kb : tensor<64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %vb = fm.param "v_bias" : tensor<1x32xf32>
    // expected-error @+1 {{layer 0: v_bias weight 'v_bias' has shape [1, 32], expected [32] (num_kv_heads=2, head_dim=16)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) v_bias(%vb : tensor<1x32xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %qn = fm.param "q_norm" : tensor<64xf32>
    // expected-error @+1 {{layer 0: q_norm weight 'q_norm' has shape [64], expected [16] (head_dim)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) q_norm(%qn : tensor<64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>, qk_norm_eps = 1.0e-05 : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %kn = fm.param "k_norm" : tensor<32xf32>
    // expected-error @+1 {{layer 0: k_norm weight 'k_norm' has shape [32], expected [16] (head_dim)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) k_norm(%kn : tensor<32xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>, qk_norm_eps = 1.0e-05 : f64} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %ks = fm.param "model.layers.0.self_attn.quant_key_scale" : tensor<1xf32>
    %vs = fm.param "model.layers.0.self_attn.quant_value_scale" : tensor<f32>
    // expected-error @+1 {{layer 0: k_scale weight 'model.layers.0.self_attn.quant_key_scale' has shape [1], expected [] (a scalar)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) k_scale(%ks : tensor<1xf32>) v_scale(%vs : tensor<f32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %ks = fm.param "ks" : tensor<f32>
    %vs = fm.param "vs" : tensor<2xf32>
    // expected-error @+1 {{layer 0: v_scale weight 'vs' has shape [2], expected [] (a scalar)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) k_scale(%ks : tensor<f32>) v_scale(%vs : tensor<2xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: result type 'tensor<8x64xf32>' differs from the input type 'tensor<?x64xf32>'}}
    %r = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<8x64xf32>
    %a = fm.add %x, %x : tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// ODS constraints: activations are 2-D f32 tensors.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf16>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>) -> tensor<?x64xf16> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.attention' op operand #0 must be 2D tensor of 32-bit float values, but got 'tensor<?x64xf16>'}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf16> -> tensor<?x64xf16>
    return %a : tensor<?x64xf16>
  }
}

// -----

// ODS constraints: weights are f32/f16/bf16 ranked tensors, not integers.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xi8>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.attention' op operand #2 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<64x64xi8>'}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xi8>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// ODS constraints: the position is an index.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  // expected-note @+1 {{prior use here}}
  func.func @prefill(%x: tensor<?x64xf32>, %pos: i64, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{use of value '%pos' expects different type than prior uses: 'index' vs 'i64'}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// ODS constraints: required attributes.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.attention' op requires attribute 'kind'}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.attention' op requires attribute 'num_kv_heads'}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// ODS constraints: attribute kinds.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{attribute 'rope' failed to satisfy constraint: rotary position embedding variant}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = 1 : i32, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{attribute 'kind' failed to satisfy constraint: which keys a query sees}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<rope half>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{attribute 'scale' failed to satisfy constraint: 64-bit float attribute}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{attribute 'window' failed to satisfy constraint: 64-bit signless integer attribute}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention local>, window = 4 : i32} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{attribute 'num_heads' failed to satisfy constraint: 64-bit signless integer attribute}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) k(%k : tensor<32x64xf32>) v(%v : tensor<32x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4.0 : f64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// ODS constraints: the generic form must size the operand groups.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{'fm.attention' op operand count (6) does not match with the total size (0) specified in attribute 'operandSegmentSizes'}}
    %a = "fm.attention"(%x, %pos, %q, %k, %v, %o) <{cache = @kv, cache_slot = 0 : i64, head_dim = 16 : i64, kind = #fm<attention global>, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope = #fm<rope none>, scale = 2.500000e-01 : f64}> : (tensor<?x64xf32>, index, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}
