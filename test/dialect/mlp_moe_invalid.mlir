// Diagnostics of fm.mlp (activation vs gate, weight shapes) and fm.moe (expert count, top-k, per-expert weights, router, shared expert), with their ODS constraints.
// RUN: fm-opt %s -split-input-file -verify-diagnostics

func.func @mlp_dynamic_width(%x: tensor<?x?xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'fm.mlp' op layer 0: the feature dimension must be static}}
  %y = fm.mlp %x gate(%u : tensor<48x32xf32>) up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 0 : i64, activation = #fm<activation swiglu>} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

func.func @swiglu_without_gate(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.mlp' op layer 4: a SwiGLU MLP needs a gate projection}}
  %y = fm.mlp %x up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 4 : i64, activation = #fm<activation swiglu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @gelu_with_gate(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.mlp' op layer 1: a GELU MLP has no gate projection}}
  %y = fm.mlp %x gate(%u : tensor<48x32xf32>) up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 1 : i64, activation = #fm<activation gelu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @up_not_2d(%x: tensor<?x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  %u = fm.param "fc1.weight" : tensor<48xf32>
  // expected-error @+1 {{'fm.mlp' op layer 0: up weight must be 2-D, got [48]}}
  %y = fm.mlp %x up(%u : tensor<48xf32>) down(%d : tensor<32x48xf32>) {layer = 0 : i64, activation = #fm<activation gelu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// The intermediate size is read from up; up's input must be the hidden size ...
func.func @up_shape(%x: tensor<?x32xf32>, %g: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  %u = fm.param "model.layers.0.mlp.up_proj.weight" : tensor<48x64xf32>
  // expected-error @+1 {{'fm.mlp' op layer 0: up weight 'model.layers.0.mlp.up_proj.weight' has shape [48, 64], expected [48, 32] (intermediate_size=48, hidden_size=32)}}
  %y = fm.mlp %x gate(%g : tensor<48x32xf32>) up(%u : tensor<48x64xf32>) down(%d : tensor<32x48xf32>) {layer = 0 : i64, activation = #fm<activation swiglu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// ... and gate and down agree with it.
func.func @gate_shape(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  %g = fm.param "model.layers.2.mlp.gate_proj.weight" : tensor<40x32xf32>
  // expected-error @+1 {{'fm.mlp' op layer 2: gate weight 'model.layers.2.mlp.gate_proj.weight' has shape [40, 32], expected [48, 32] (intermediate_size=48, hidden_size=32)}}
  %y = fm.mlp %x gate(%g : tensor<40x32xf32>) up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 2 : i64, activation = #fm<activation swiglu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @down_transposed(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>) -> tensor<?x32xf32> {
  %d = fm.param "model.layers.0.mlp.down_proj.weight" : tensor<48x32xf32>
  // expected-error @+1 {{'fm.mlp' op layer 0: down weight 'model.layers.0.mlp.down_proj.weight' has shape [48, 32], expected [32, 48] (intermediate_size=48, hidden_size=32)}}
  %y = fm.mlp %x gate(%u : tensor<48x32xf32>) up(%u : tensor<48x32xf32>) down(%d : tensor<48x32xf32>) {layer = 0 : i64, activation = #fm<activation swiglu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @up_bias_shape(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  %ub = fm.param "fc1.bias" : tensor<32xf32>
  // expected-error @+1 {{'fm.mlp' op layer 0: up_bias weight 'fc1.bias' has shape [32], expected [48] (intermediate_size=48, hidden_size=32)}}
  %y = fm.mlp %x up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) up_bias(%ub : tensor<32xf32>) {layer = 0 : i64, activation = #fm<activation gelu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @down_bias_shape(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  %db = fm.param "fc2.bias" : tensor<48xf32>
  // expected-error @+1 {{'fm.mlp' op layer 0: down_bias weight 'fc2.bias' has shape [48], expected [32] (intermediate_size=48, hidden_size=32)}}
  %y = fm.mlp %x up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) down_bias(%db : tensor<48xf32>) {layer = 0 : i64, activation = #fm<activation gelu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @mlp_result(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'fm.mlp' op layer 0: result type 'tensor<8x32xf32>' differs from the input type 'tensor<?x32xf32>'}}
  %y = fm.mlp %x up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 0 : i64, activation = #fm<activation gelu>} : tensor<?x32xf32> -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// ODS: the activation is an #fm<activation ...> and required.
func.func @mlp_activation_string(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{attribute 'activation' failed to satisfy constraint: MLP activation}}
  %y = fm.mlp %x up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 0 : i64, activation = "gelu"} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @mlp_no_activation(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.mlp' op requires attribute 'activation'}}
  %y = fm.mlp %x up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 0 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @mlp_unknown_activation(%x: tensor<?x32xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  // expected-error @+2 {{expected ::mlir::fm::Activation to be one of: swiglu, gelu}}
  // expected-error @+1 {{failed to parse Fm_ActivationAttr parameter 'value' which is to be a `::mlir::fm::Activation`}}
  %y = fm.mlp %x up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 0 : i64, activation = #fm<activation relu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_no_experts(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.moe' op layer 1: an MoE layer needs at least one expert}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 1 : i64, num_experts = 0 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_top0(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.moe' op layer 1: top-k must be at least 1, got 0}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 1 : i64, num_experts = 2 : i64, top_k = 0 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_top_negative(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.moe' op layer 1: top-k must be at least 1, got -2}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 1 : i64, num_experts = 2 : i64, top_k = -2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_top5_of_4(%x: tensor<?x32xf32>, %r: tensor<4x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.moe' op layer 7: top-k 5 exceeds the 4 experts}}
  %y = fm.moe %x router(%r : tensor<4x32xf32>) gate(%g, %g, %g, %g : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g, %g, %g : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d, %d, %d : tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>) {layer = 7 : i64, num_experts = 4 : i64, top_k = 5 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// One weight per expert in each of gate, up and down.
func.func @moe_gate_count(%x: tensor<?x32xf32>, %r: tensor<4x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.moe' op layer 1: 3 expert gate weights for 4 experts}}
  %y = fm.moe %x router(%r : tensor<4x32xf32>) gate(%g, %g, %g : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g, %g, %g : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d, %d, %d : tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>) {layer = 1 : i64, num_experts = 4 : i64, top_k = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_up_count(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.moe' op layer 1: 3 expert up weights for 2 experts}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g, %g : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 1 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_down_count(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.moe' op layer 1: 1 expert down weights for 2 experts}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d : tensor<32x16xf32>) {layer = 1 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_dynamic_width(%x: tensor<?x?xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'fm.moe' op layer 0: the feature dimension must be static}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

func.func @moe_router(%x: tensor<?x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %r = fm.param "model.layers.1.block_sparse_moe.gate.weight" : tensor<4x32xf32>
  // expected-error @+1 {{'fm.moe' op layer 1: router weight 'model.layers.1.block_sparse_moe.gate.weight' has shape [4, 32], expected [2, 32] (num_experts=2, hidden_size=32)}}
  %y = fm.moe %x router(%r : tensor<4x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 1 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// Every expert has expert 0's intermediate size; the message names the expert.
func.func @moe_expert_gate(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %g1 = fm.param "model.layers.1.mlp.experts.1.gate_proj.weight" : tensor<24x32xf32>
  // expected-error @+1 {{'fm.moe' op layer 1 expert 1: gate weight 'model.layers.1.mlp.experts.1.gate_proj.weight' has shape [24, 32], expected [16, 32] (moe_intermediate_size=16, hidden_size=32)}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g1 : tensor<16x32xf32>, tensor<24x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 1 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_expert_up(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %u0 = fm.param "model.layers.1.mlp.experts.0.up_proj.weight" : tensor<16x64xf32>
  // expected-error @+1 {{'fm.moe' op layer 1 expert 0: up weight 'model.layers.1.mlp.experts.0.up_proj.weight' has shape [16, 64], expected [16, 32] (moe_intermediate_size=16, hidden_size=32)}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%u0, %g : tensor<16x64xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 1 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_expert_down(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %d1 = fm.param "model.layers.1.mlp.experts.1.down_proj.weight" : tensor<16x32xf32>
  // expected-error @+1 {{'fm.moe' op layer 1 expert 1: down weight 'model.layers.1.mlp.experts.1.down_proj.weight' has shape [16, 32], expected [32, 16] (moe_intermediate_size=16, hidden_size=32)}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d1 : tensor<32x16xf32>, tensor<16x32xf32>) {layer = 1 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// A shared expert comes with all four of its weights.
func.func @moe_shared_partial(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %sg = fm.param "shared_expert.gate_proj.weight" : tensor<40x32xf32>
  %su = fm.param "shared_expert.up_proj.weight" : tensor<40x32xf32>
  %sd = fm.param "shared_expert.down_proj.weight" : tensor<32x40xf32>
  // expected-error @+1 {{'fm.moe' op layer 0: a shared expert needs shared_gate, shared_up, shared_down and shared_expert_gate}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) shared_gate(%sg : tensor<40x32xf32>) shared_up(%su : tensor<40x32xf32>) shared_down(%sd : tensor<32x40xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_shared_gate_only(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %seg = fm.param "shared_expert_gate.weight" : tensor<1x32xf32>
  // expected-error @+1 {{'fm.moe' op layer 0: a shared expert needs shared_gate, shared_up, shared_down and shared_expert_gate}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) shared_expert_gate(%seg : tensor<1x32xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// The shared expert's width comes from shared_gate; the others follow it.
func.func @moe_shared_gate_shape(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %sg = fm.param "shared_expert.gate_proj.weight" : tensor<40x64xf32>
  %su = fm.param "shared_expert.up_proj.weight" : tensor<40x32xf32>
  %sd = fm.param "shared_expert.down_proj.weight" : tensor<32x40xf32>
  %seg = fm.param "shared_expert_gate.weight" : tensor<1x32xf32>
  // expected-error @+1 {{'fm.moe' op layer 0: shared_gate weight 'shared_expert.gate_proj.weight' has shape [40, 64], expected [40, 32] (shared_expert_intermediate_size=40, hidden_size=32)}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) shared_gate(%sg : tensor<40x64xf32>) shared_up(%su : tensor<40x32xf32>) shared_down(%sd : tensor<32x40xf32>) shared_expert_gate(%seg : tensor<1x32xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_shared_up_shape(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %sg = fm.param "shared_expert.gate_proj.weight" : tensor<40x32xf32>
  %su = fm.param "shared_expert.up_proj.weight" : tensor<48x32xf32>
  %sd = fm.param "shared_expert.down_proj.weight" : tensor<32x40xf32>
  %seg = fm.param "shared_expert_gate.weight" : tensor<1x32xf32>
  // expected-error @+1 {{'fm.moe' op layer 0: shared_up weight 'shared_expert.up_proj.weight' has shape [48, 32], expected [40, 32] (shared_expert_intermediate_size=40, hidden_size=32)}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) shared_gate(%sg : tensor<40x32xf32>) shared_up(%su : tensor<48x32xf32>) shared_down(%sd : tensor<32x40xf32>) shared_expert_gate(%seg : tensor<1x32xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_shared_down_shape(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %sg = fm.param "shared_expert.gate_proj.weight" : tensor<40x32xf32>
  %su = fm.param "shared_expert.up_proj.weight" : tensor<40x32xf32>
  %sd = fm.param "shared_expert.down_proj.weight" : tensor<40x32xf32>
  %seg = fm.param "shared_expert_gate.weight" : tensor<1x32xf32>
  // expected-error @+1 {{'fm.moe' op layer 0: shared_down weight 'shared_expert.down_proj.weight' has shape [40, 32], expected [32, 40] (shared_expert_intermediate_size=40, hidden_size=32)}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) shared_gate(%sg : tensor<40x32xf32>) shared_up(%su : tensor<40x32xf32>) shared_down(%sd : tensor<40x32xf32>) shared_expert_gate(%seg : tensor<1x32xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_shared_expert_gate_shape(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %sg = fm.param "shared_expert.gate_proj.weight" : tensor<40x32xf32>
  %su = fm.param "shared_expert.up_proj.weight" : tensor<40x32xf32>
  %sd = fm.param "shared_expert.down_proj.weight" : tensor<32x40xf32>
  %seg = fm.param "shared_expert_gate.weight" : tensor<32xf32>
  // expected-error @+1 {{'fm.moe' op layer 0: shared_expert_gate weight 'shared_expert_gate.weight' has shape [32], expected [1, 32] (hidden_size)}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) shared_gate(%sg : tensor<40x32xf32>) shared_up(%su : tensor<40x32xf32>) shared_down(%sd : tensor<32x40xf32>) shared_expert_gate(%seg : tensor<32xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_result(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.moe' op layer 0: result type 'tensor<4x32xf32>' differs from the input type 'tensor<?x32xf32>'}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<4x32xf32>
  %z = fm.add %x, %x : tensor<?x32xf32>
  return %z : tensor<?x32xf32>
}

// -----

// ODS: norm_topk_prob is a unit attribute; expert weights are float tensors.
func.func @moe_norm_bool(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{attribute 'norm_topk_prob' failed to satisfy constraint: unit attribute}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64, norm_topk_prob = false} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_int_expert(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %gi: tensor<16x32xi8>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.moe' op operand #3 must be variadic of ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<16x32xi8>'}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %gi : tensor<16x32xf32>, tensor<16x32xi8>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @moe_no_top_k(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.moe' op requires attribute 'top_k'}}
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 0 : i64, num_experts = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
