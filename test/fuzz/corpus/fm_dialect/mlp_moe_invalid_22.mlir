// Every expert has expert 0's intermediate size; the message names the expert.
func.func @moe_expert_gate(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %g1 = fm.param "model.layers.1.mlp.experts.1.gate_proj.weight" : tensor<24x32xf32>
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g1 : tensor<16x32xf32>, tensor<24x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 1 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
