func.func @moe_shared_up_shape(%x: tensor<?x32xf32>, %r: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %sg = fm.param "shared_expert.gate_proj.weight" : tensor<40x32xf32>
  %su = fm.param "shared_expert.up_proj.weight" : tensor<48x32xf32>
  %sd = fm.param "shared_expert.down_proj.weight" : tensor<32x40xf32>
  %seg = fm.param "shared_expert_gate.weight" : tensor<1x32xf32>
  %y = fm.moe %x router(%r : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) shared_gate(%sg : tensor<40x32xf32>) shared_up(%su : tensor<48x32xf32>) shared_down(%sd : tensor<32x40xf32>) shared_expert_gate(%seg : tensor<1x32xf32>) {layer = 0 : i64, num_experts = 2 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
