// fm-share-kv: cache slots only for layers that write K/V (compacted), and a
// prefill_last phase where the layers that only feed the logits run on the
// last position.
// RUN: fm-opt %s --fm-share-kv --split-input-file | FileCheck %s

// Sparse slots 3 and 7 are compacted to 0 and 1; the reusing layer follows
// its writer to slot 1; the cache shrinks to the 2 slots that are written.
// CHECK-LABEL: fm.model @compact
// CHECK: fm.kv_cache @kv layers(2) kv_heads(1) head_dim(16) capacity(64) : f32
// CHECK-LABEL: func.func @prefill(
// CHECK: fm.attention {{.*}} cache @kv[0] {{.*}}layer = 0
// CHECK: fm.attention {{.*}} cache @kv[1] {{.*}}layer = 1
// CHECK: fm.attention {{.*}} reuse cache @kv[1] {{.*}}layer = 2
// CHECK: return {{.*}} : tensor<?x32xf32>
// The generation variant: from the reusing layer's input norm on, one row.
// CHECK-LABEL: func.func @prefill_last(
// CHECK-SAME: %[[TOK:.*]]: tensor<?xi32>, %[[POS:.*]]: index) -> tensor<1x32xf32> attributes {fm.phase = "prefill_last"}
// CHECK: fm.attention %{{.*}} at %[[POS]] {{.*}} cache @kv[0]
// CHECK: fm.attention %{{.*}} at %[[POS]] {{.*}} cache @kv[1]
// CHECK: %[[ROW:.*]], %[[LAST:.*]] = fm.take_last %[[X:.*]] at %[[POS]] : tensor<?x32xf32> -> tensor<1x32xf32>
// CHECK-NEXT: fm.rms_norm %[[ROW]], {{.*}} -> tensor<1x32xf32>
// CHECK: fm.attention %{{.*}} at %[[LAST]] {{.*}} reuse cache @kv[1] {{.*}} : tensor<1x32xf32> -> tensor<1x32xf32>
// CHECK: fm.lm_head {{.*}} : tensor<1x32xf32>, tensor<32x32xf32> -> tensor<1x32xf32>
// CHECK: return {{.*}} : tensor<1x32xf32>
fm.model @compact attributes {family = "afm7", hidden_size = 32 : i64, vocab_size = 32 : i64} {
  fm.kv_cache @kv layers(8) kv_heads(1) head_dim(16) capacity(64) : f32
  func.func @prefill(%tokens: tensor<?xi32>, %pos: index) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %emb = fm.param "emb" : tensor<32x32xf32>
    %nw = fm.param "norm" : tensor<32xf32>
    %wq = fm.param "q" : tensor<32x32xf32>
    %wk = fm.param "k" : tensor<16x32xf32>
    %wo = fm.param "o" : tensor<32x32xf32>
    %x = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<32x32xf32> -> tensor<?x32xf32>
    %n0 = fm.rms_norm %x, %nw {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
    %a0 = fm.attention %n0 at %pos q(%wq : tensor<32x32xf32>) k(%wk : tensor<16x32xf32>) v(%wk : tensor<16x32xf32>) o(%wo : tensor<32x32xf32>) cache @kv [3] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope none>, scale = 2.5e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
    %x1 = fm.add %x, %a0 : tensor<?x32xf32>
    %n1 = fm.rms_norm %x1, %nw {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
    %a1 = fm.attention %n1 at %pos q(%wq : tensor<32x32xf32>) k(%wk : tensor<16x32xf32>) v(%wk : tensor<16x32xf32>) o(%wo : tensor<32x32xf32>) cache @kv [7] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope none>, scale = 2.5e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
    %x2 = fm.add %x1, %a1 : tensor<?x32xf32>
    %n2 = fm.rms_norm %x2, %nw {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
    %a2 = fm.attention %n2 at %pos q(%wq : tensor<32x32xf32>) o(%wo : tensor<32x32xf32>) reuse cache @kv [7] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 2 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope none>, scale = 2.5e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
    %x3 = fm.add %x2, %a2 : tensor<?x32xf32>
    %n3 = fm.rms_norm %x3, %nw {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
    %l = fm.lm_head %n3, %emb {tied} : tensor<?x32xf32>, tensor<32x32xf32> -> tensor<?x32xf32>
    return %l : tensor<?x32xf32>
  }
}

// -----

// Without KV-reusing layers, only the final norm and the LM head move to the
// last row. A decode phase is left alone, and prefill_last is added once.
// CHECK-LABEL: fm.model @plain
// CHECK-LABEL: func.func @prefill_last
// CHECK: fm.attention {{.*}} : tensor<?x32xf32> -> tensor<?x32xf32>
// CHECK: %[[ROW:.*]], %{{.*}} = fm.take_last
// CHECK-NEXT: fm.rms_norm %[[ROW]]
// CHECK-NEXT: fm.lm_head {{.*}} -> tensor<1x32xf32>
// CHECK-LABEL: func.func @decode
// CHECK-NOT: take_last
// CHECK: return
fm.model @plain attributes {family = "llama", hidden_size = 32 : i64, vocab_size = 32 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(16) capacity(64) : f32
  func.func @prefill(%tokens: tensor<?xi32>, %pos: index) -> tensor<?x32xf32> attributes {fm.phase = "prefill"} {
    %emb = fm.param "emb" : tensor<32x32xf32>
    %nw = fm.param "norm" : tensor<32xf32>
    %wq = fm.param "q" : tensor<32x32xf32>
    %wk = fm.param "k" : tensor<16x32xf32>
    %x = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<32x32xf32> -> tensor<?x32xf32>
    %a0 = fm.attention %x at %pos q(%wq : tensor<32x32xf32>) k(%wk : tensor<16x32xf32>) v(%wk : tensor<16x32xf32>) o(%wq : tensor<32x32xf32>) cache @kv [0] {head_dim = 16 : i64, kind = #fm<attention global>, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope = #fm<rope none>, scale = 2.5e-01 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>
    %n = fm.rms_norm %a0, %nw {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
    %l = fm.lm_head %n, %emb {tied} : tensor<?x32xf32>, tensor<32x32xf32> -> tensor<?x32xf32>
    return %l : tensor<?x32xf32>
  }
  func.func @decode(%tokens: tensor<1xi32>, %pos: index) -> tensor<1x32xf32> attributes {fm.phase = "decode"} {
    %emb = fm.param "emb" : tensor<32x32xf32>
    %x = fm.embedding %tokens, %emb : tensor<1xi32>, tensor<32x32xf32> -> tensor<1x32xf32>
    %l = fm.lm_head %x, %emb {tied} : tensor<1x32xf32>, tensor<32x32xf32> -> tensor<1x32xf32>
    return %l : tensor<1x32xf32>
  }
}
