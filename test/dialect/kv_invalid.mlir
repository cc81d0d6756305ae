// Diagnostics of KV caches: fm.kv_cache's verifier and ODS, the cache an fm.attention names (existence, slot range, head layout, int8 scales), and the model's KV plan (one writer per slot, reuse of an earlier writer).
// RUN: fm-opt %s -split-input-file -verify-diagnostics

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op KV cache @kv: layers must be positive, got 0}}
  fm.kv_cache @kv layers(0) kv_heads(2) head_dim(16) capacity(64) : f32
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op KV cache @kv_local: kv_heads must be positive, got 0}}
  fm.kv_cache @kv_local layers(2) kv_heads(0) head_dim(16) capacity(64) : f32
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op KV cache @kv: head_dim must be positive, got 0}}
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(0) capacity(64) : f32
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op KV cache @kv: capacity must be positive, got 0}}
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(0) : f32
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op KV cache @kv: element type must be f32, f16, bf16 or i8, got 'i32'}}
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : i32
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op KV cache @kv: element type must be f32, f16, bf16 or i8, got 'f64'}}
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f64
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op KV cache @kv: element type must be f32, f16, bf16 or i8, got 'tensor<4xf32>'}}
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : tensor<4xf32>
}

// -----

// ODS: a cache is a symbol of the model; two caches cannot share a name.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  // expected-note @+1 {{see existing symbol definition here}}
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  // expected-error @+1 {{redefinition of symbol named 'kv'}}
  fm.kv_cache @kv layers(1) kv_heads(2) head_dim(16) capacity(64) : f16
}

// -----

// ODS: the sizes are 64-bit integers (generic form: the custom syntax only parses i64 sizes) ...
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op attribute 'layers' failed to satisfy constraint: 64-bit signless integer attribute}}
  "fm.kv_cache"() <{sym_name = "kv", layers = 2 : i32, kv_heads = 2 : i64, head_dim = 16 : i64, capacity = 64 : i64, element_type = f32}> : () -> ()
}

// -----

// ... and the element type is a type.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  // expected-error @+1 {{Invalid attribute `element_type` in property conversion: 8 : i64}}
  "fm.kv_cache"() <{sym_name = "kv", layers = 2 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, capacity = 64 : i64, element_type = 8 : i64}> : () -> ()
}

// -----

// ... and every size is required.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  // expected-error @+1 {{'fm.kv_cache' op requires attribute 'capacity'}}
  "fm.kv_cache"() <{sym_name = "kv", layers = 2 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, element_type = f32}> : () -> ()
}

// -----

// The cache an attention layer names must exist in its model.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: no KV cache named @kv_global}}
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv_global [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// ... and be an fm.kv_cache, not some other symbol.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: no KV cache named @prefill}}
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @prefill [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// A cache declared in another model is not visible.
fm.model @other attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
}
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: no KV cache named @kv}}
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 2: slot 2 of @kv is out of range (the cache has 2 slots)}}
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [2] {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// The slot of a reusing layer is range-checked too.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 3: slot 7 of @kv is out of range (the cache has 2 slots)}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) reuse cache @kv [7] {layer = 3 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(4) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: attends with 2 KV heads of 16, but @kv holds 4 heads of 16}}
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(32) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: attends with 2 KV heads of 16, but @kv holds 2 heads of 32}}
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// Writing an int8 cache needs the K/V scales.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : i8
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 0: writes the int8 cache @kv but has no k_scale/v_scale}}
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// KV plan: each slot has exactly one writer per phase.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %a0 = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    // expected-error @+1 {{layer 1 writes slot 0 of @kv, which layer 0 already writes}}
    %a = fm.attention %a0 at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// KV plan: a reusing layer needs a writer of that slot ...
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %a0 = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    // expected-error @+1 {{layer 1 reuses slot 1 of @kv, but no layer writes that slot}}
    %a = fm.attention %a0 at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) reuse cache @kv [1] {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// ... in the same phase: decode cannot reuse a slot that only prefill writes.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(2) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %a = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [1] {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
  func.func @decode(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "decode"} {
    // expected-error @+1 {{layer 2 reuses slot 1 of @kv, but no layer writes that slot}}
    %a = fm.attention %x at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) reuse cache @kv [1] {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// ... that comes before it.
fm.model @afm7 attributes {family = "afm7", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv layers(41) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    // expected-error @+1 {{layer 37 reuses the KV cache of layer 40, which comes after it}}
    %a37 = fm.attention %x at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) reuse cache @kv [40] {layer = 37 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    %a = fm.attention %a37 at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv [40] {layer = 40 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}

// -----

// Caches are told apart by name: writing slot 0 of @kv_a does not make slot 0 of @kv_b readable.
fm.model @m attributes {family = "llama", hidden_size = 64 : i64, vocab_size = 128 : i64} {
  fm.kv_cache @kv_a layers(1) kv_heads(2) head_dim(16) capacity(64) : f32
  fm.kv_cache @kv_b layers(1) kv_heads(2) head_dim(16) capacity(64) : f32
  func.func @prefill(%x: tensor<?x64xf32>, %pos: index, %q: tensor<64x64xf32>, %o: tensor<64x64xf32>, %qkv: tensor<128x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %a0 = fm.attention %x at %pos qkv(%qkv : tensor<128x64xf32>) o(%o : tensor<64x64xf32>) cache @kv_a [0] {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    // expected-error @+1 {{layer 1 reuses slot 0 of @kv_b, but no layer writes that slot}}
    %a = fm.attention %a0 at %pos q(%q : tensor<64x64xf32>) o(%o : tensor<64x64xf32>) reuse cache @kv_b [0] {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope none>, kind = #fm<attention global>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %a : tensor<?x64xf32>
  }
}
