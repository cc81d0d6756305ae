// Diagnostics of the model structure: fm.model's own checks and ODS constraints (attributes, symbol, region), and the fm.phase attribute (FmDialect::verifyOperationAttribute).
// RUN: fm-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'fm.model' op model 'tiny': vocab_size and hidden_size must be positive}}
fm.model @tiny attributes {family = "llama", vocab_size = 0 : i64, hidden_size = 64 : i64} {
}

// -----

// expected-error @+1 {{'fm.model' op model 'tiny': vocab_size and hidden_size must be positive}}
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 0 : i64} {
}

// -----

// ODS: family, vocab_size and hidden_size are required.
// expected-error @+1 {{'fm.model' op requires attribute 'family'}}
fm.model @tiny attributes {vocab_size = 128 : i64, hidden_size = 64 : i64} {
}

// -----

// expected-error @+1 {{'fm.model' op requires attribute 'hidden_size'}}
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64} {
}

// -----

// ODS: attribute kinds.
// expected-error @+1 {{attribute 'family' failed to satisfy constraint: string attribute}}
fm.model @tiny attributes {family = @llama, vocab_size = 128 : i64, hidden_size = 64 : i64} {
}

// -----

// expected-error @+1 {{attribute 'vocab_size' failed to satisfy constraint: 64-bit signless integer attribute}}
fm.model @tiny attributes {family = "llama", vocab_size = "128", hidden_size = 64 : i64} {
}

// -----

// expected-error @+1 {{attribute 'config' failed to satisfy constraint: dictionary of named attribute values}}
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64, config = "llama.json"} {
}

// -----

// expected-error @+1 {{attribute 'weights' failed to satisfy constraint: string attribute}}
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64, weights = ["a", "b"]} {
}

// -----

// ODS: a model is a symbol and needs a symbol table around it (not a function body).
func.func @f() {
  // expected-error @+1 {{'fm.model' op symbol's parent must have the SymbolTable trait}}
  fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  }
  return
}

// -----

// ODS: two models in one module cannot share a name.
// expected-note @+1 {{see existing symbol definition here}}
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
}
// expected-error @+1 {{redefinition of symbol named 'tiny'}}
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
}

// -----

// ODS: the body is exactly one block ...
// expected-error @+1 {{'fm.model' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
"fm.model"() <{sym_name = "tiny", family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64}> ({
}) : () -> ()

// -----

// expected-error @+1 {{'fm.model' op expects region #0 to have 0 or 1 blocks}}
"fm.model"() <{sym_name = "tiny", family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64}> ({
^bb0:
  "fm.kv_cache"() <{sym_name = "kv", layers = 1 : i64, kv_heads = 1 : i64, head_dim = 16 : i64, capacity = 8 : i64, element_type = f32}> : () -> ()
^bb1:
  "fm.kv_cache"() <{sym_name = "kv2", layers = 1 : i64, kv_heads = 1 : i64, head_dim = 16 : i64, capacity = 8 : i64, element_type = f32}> : () -> ()
}) : () -> ()

// -----

// ODS: ... and isolated from above: a nested model cannot use a value of the enclosing model.
fm.model @outer attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  %w = fm.param "w" : tensor<4x64xf32>
  // expected-note @+1 {{required by region isolation constraints}}
  fm.model @inner attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
    // expected-error @+1 {{'fm.add' op using value defined outside the region}}
    %y = fm.add %w, %w : tensor<4x64xf32>
  }
}

// -----

// fm.phase names one of the three phases ...
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  // expected-error @+1 {{'fm.phase' must be "prefill", "prefill_last", "decode" or "encode_image"}}
  func.func @train(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "train"} {
    return %x : tensor<?x64xf32>
  }
}

// -----

// ... as a string.
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  // expected-error @+1 {{'fm.phase' must be "prefill", "prefill_last", "decode" or "encode_image"}}
  func.func @prefill(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = 0 : i64} {
    return %x : tensor<?x64xf32>
  }
}

// -----

// Phase names are case-sensitive.
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  // expected-error @+1 {{'fm.phase' must be "prefill", "prefill_last", "decode" or "encode_image"}}
  func.func @decode(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "Decode"} {
    return %x : tensor<?x64xf32>
  }
}

// -----

// fm.phase marks a function, not another op ...
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  // expected-error @+1 {{'fm.phase' marks a func.func, not 'fm.kv_cache'}}
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(16) capacity(8) {fm.phase = "decode"} : f32
}

// -----

// expected-error @+1 {{'fm.phase' marks a func.func, not 'fm.model'}}
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64, fm.phase = "prefill"} {
}

// -----

// ... and is checked even before its value (a non-function with a bad value names the op).
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'fm.phase' marks a func.func, not 'fm.add'}}
  %y = fm.add %x, %x {fm.phase = 3 : i64} : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A phase function must sit in an fm.model.
// expected-error @+1 {{phase function 'prefill' must be inside an fm.model}}
func.func @prefill(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
  return %x : tensor<?x64xf32>
}

// -----

// ... directly: a phase function in a module nested in a model does not count.
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  builtin.module {
    // expected-error @+1 {{phase function 'decode' must be inside an fm.model}}
    func.func @decode(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "decode"} {
      return %x : tensor<?x64xf32>
    }
  }
}

// -----

// fm.phase is the dialect's only discardable attribute.
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  // expected-error @+1 {{unknown fm attribute}}
  func.func @prefill(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill", fm.layer = 3 : i64} {
    return %x : tensor<?x64xf32>
  }
}
