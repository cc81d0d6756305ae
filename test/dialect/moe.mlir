// Round trip of fm.moe: top-1 and top-2 routing, with and without norm_topk_prob, with a shared expert, inside and outside a model.
// RUN: fm-opt %s -split-input-file | fm-opt -split-input-file | FileCheck %s
// RUN: fm-opt %s -split-input-file > %t.1 && fm-opt %t.1 -split-input-file > %t.2 && diff %t.1 %t.2

// Top-2 of 4 experts with renormalized routing weights (mixtral).
// CHECK-LABEL: func.func @moe_top2_norm
// CHECK: %[[R:.*]] = fm.param "model.layers.1.block_sparse_moe.gate.weight" : tensor<4x32xf32>
// CHECK: fm.moe %{{[a-z0-9_]+}} router(%[[R]] : tensor<4x32xf32>)
// CHECK-SAME: gate(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>)
// CHECK-SAME: up(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>)
// CHECK-SAME: down(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>)
// CHECK-SAME: {layer = 1 : i64, norm_topk_prob, num_experts = 4 : i64, top_k = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
func.func @moe_top2_norm(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %r = fm.param "model.layers.1.block_sparse_moe.gate.weight" : tensor<4x32xf32>
  %g0 = fm.param "e0.w1" : tensor<24x32xf32>
  %g1 = fm.param "e1.w1" : tensor<24x32xf32>
  %g2 = fm.param "e2.w1" : tensor<24x32xf32>
  %g3 = fm.param "e3.w1" : tensor<24x32xf32>
  %u0 = fm.param "e0.w3" : tensor<24x32xf32>
  %u1 = fm.param "e1.w3" : tensor<24x32xf32>
  %u2 = fm.param "e2.w3" : tensor<24x32xf32>
  %u3 = fm.param "e3.w3" : tensor<24x32xf32>
  %d0 = fm.param "e0.w2" : tensor<32x24xf32>
  %d1 = fm.param "e1.w2" : tensor<32x24xf32>
  %d2 = fm.param "e2.w2" : tensor<32x24xf32>
  %d3 = fm.param "e3.w2" : tensor<32x24xf32>
  %y = fm.moe %x router(%r : tensor<4x32xf32>) gate(%g0, %g1, %g2, %g3 : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) up(%u0, %u1, %u2, %u3 : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) down(%d0, %d1, %d2, %d3 : tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>) {layer = 1 : i64, num_experts = 4 : i64, top_k = 2 : i64, norm_topk_prob} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// Top-2 of 4 without renormalization (qwen2_moe keeps the raw softmax weights).
// CHECK-LABEL: func.func @moe_top2_raw
// CHECK: fm.moe
// CHECK-SAME: {layer = 0 : i64, num_experts = 4 : i64, top_k = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
// CHECK-NOT: norm_topk_prob
func.func @moe_top2_raw(%x: tensor<?x32xf32>, %r: tensor<4x32xf32>, %g: tensor<24x32xf32>, %d: tensor<32x24xf32>) -> tensor<?x32xf32> {
  %y = fm.moe %x router(%r : tensor<4x32xf32>) gate(%g, %g, %g, %g : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) up(%g, %g, %g, %g : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) down(%d, %d, %d, %d : tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>) {layer = 0 : i64, num_experts = 4 : i64, top_k = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// Top-1 routing (switch-style), with and without norm_topk_prob, over 2 experts.
// CHECK-LABEL: func.func @moe_top1
// CHECK: fm.moe %{{[a-z0-9_]+}} router(%{{[a-z0-9_]+}} : tensor<2x32xf32>) gate(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK-SAME: {layer = 2 : i64, num_experts = 2 : i64, top_k = 1 : i64}
// CHECK: fm.moe
// CHECK-SAME: {layer = 3 : i64, norm_topk_prob, num_experts = 2 : i64, top_k = 1 : i64}
func.func @moe_top1(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 2 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  %z = fm.moe %y router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 3 : i64, num_experts = 2 : i64, top_k = 1 : i64, norm_topk_prob} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %z : tensor<?x32xf32>
}

// -----

// A single expert with top-1 is a (routed) dense MLP; top-k may equal the expert count.
// CHECK-LABEL: func.func @moe_one_expert
// CHECK: fm.moe %{{[a-z0-9_]+}} router(%{{[a-z0-9_]+}} : tensor<1x32xf32>) gate(%{{[a-z0-9_]+}} : tensor<16x32xf32>) up(%{{[a-z0-9_]+}} : tensor<16x32xf32>) down(%{{[a-z0-9_]+}} : tensor<32x16xf32>)
// CHECK-SAME: {layer = 0 : i64, num_experts = 1 : i64, top_k = 1 : i64}
// CHECK: fm.moe
// CHECK-SAME: {layer = 1 : i64, norm_topk_prob, num_experts = 2 : i64, top_k = 2 : i64}
func.func @moe_one_expert(%x: tensor<?x32xf32>, %r1: tensor<1x32xf32>, %r2: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %y = fm.moe %x router(%r1 : tensor<1x32xf32>) gate(%g : tensor<16x32xf32>) up(%g : tensor<16x32xf32>) down(%d : tensor<32x16xf32>) {layer = 0 : i64, num_experts = 1 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  %z = fm.moe %y router(%r2 : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 1 : i64, num_experts = 2 : i64, top_k = 2 : i64, norm_topk_prob} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %z : tensor<?x32xf32>
}

// -----

// A shared expert (qwen2_moe): always on, gated by sigmoid(shared_expert_gate . x); its width (40) differs from the experts' (16).
// CHECK-LABEL: func.func @moe_shared_expert
// CHECK: fm.moe %{{[a-z0-9_]+}} router(%{{[a-z0-9_]+}} : tensor<4x32xf32>)
// CHECK-SAME: shared_gate(%{{[a-z0-9_]+}} : tensor<40x32xf32>) shared_up(%{{[a-z0-9_]+}} : tensor<40x32xf32>) shared_down(%{{[a-z0-9_]+}} : tensor<32x40xf32>) shared_expert_gate(%{{[a-z0-9_]+}} : tensor<1x32xf32>)
// CHECK-SAME: {layer = 0 : i64, num_experts = 4 : i64, top_k = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
func.func @moe_shared_expert(%x: tensor<?x32xf32>, %r: tensor<4x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %sg = fm.param "model.layers.0.mlp.shared_expert.gate_proj.weight" : tensor<40x32xf32>
  %su = fm.param "model.layers.0.mlp.shared_expert.up_proj.weight" : tensor<40x32xf32>
  %sd = fm.param "model.layers.0.mlp.shared_expert.down_proj.weight" : tensor<32x40xf32>
  %seg = fm.param "model.layers.0.mlp.shared_expert_gate.weight" : tensor<1x32xf32>
  %y = fm.moe %x router(%r : tensor<4x32xf32>) gate(%g, %g, %g, %g : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g, %g, %g : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d, %d, %d : tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>) shared_gate(%sg : tensor<40x32xf32>) shared_up(%su : tensor<40x32xf32>) shared_down(%sd : tensor<32x40xf32>) shared_expert_gate(%seg : tensor<1x32xf32>) {layer = 0 : i64, num_experts = 4 : i64, top_k = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// An MoE layer in a decoder model between attention and the residual add, with static tokens and mixed dtypes.
// CHECK-LABEL: fm.model @mixtral_tiny
// CHECK: fm.attention
// CHECK: fm.moe %{{[a-z0-9_]+}} router(%{{[a-z0-9_]+}} : tensor<2x32xbf16>)
// CHECK-SAME: {layer = 0 : i64, norm_topk_prob, num_experts = 2 : i64, top_k = 1 : i64} : tensor<8x32xf32> -> tensor<8x32xf32>
// CHECK: fm.add
fm.model @mixtral_tiny attributes {family = "mixtral", vocab_size = 64 : i64, hidden_size = 32 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(16) capacity(32) : f32
  func.func @prefill(%x: tensor<8x32xf32>, %pos: index) -> tensor<8x32xf32> attributes {fm.phase = "prefill"} {
    %qkv = fm.param "qkv" : tensor<64x32xf32>
    %o = fm.param "o" : tensor<32x32xf32>
    %a = fm.attention %x at %pos qkv(%qkv : tensor<64x32xf32>) o(%o : tensor<32x32xf32>) cache @kv [0] {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f64, rope = #fm<rope half>, rope_theta = 1.0e+06 : f64, kind = #fm<attention global>} : tensor<8x32xf32> -> tensor<8x32xf32>
    %r = fm.param "router" : tensor<2x32xbf16>
    %g = fm.param "g" : tensor<16x32xbf16>
    %u = fm.param "u" : tensor<16x32xf16>
    %d = fm.param "d" : tensor<32x16xbf16>
    %m = fm.moe %a router(%r : tensor<2x32xbf16>) gate(%g, %g : tensor<16x32xbf16>, tensor<16x32xbf16>) up(%u, %u : tensor<16x32xf16>, tensor<16x32xf16>) down(%d, %d : tensor<32x16xbf16>, tensor<32x16xbf16>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64, norm_topk_prob} : tensor<8x32xf32> -> tensor<8x32xf32>
    %y = fm.add %a, %m : tensor<8x32xf32>
    return %y : tensor<8x32xf32>
  }
}
