// A single expert with top-1 is a (routed) dense MLP; top-k may equal the expert count.
func.func @moe_one_expert(%x: tensor<?x32xf32>, %r1: tensor<1x32xf32>, %r2: tensor<2x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %y = fm.moe %x router(%r1 : tensor<1x32xf32>) gate(%g : tensor<16x32xf32>) up(%g : tensor<16x32xf32>) down(%d : tensor<32x16xf32>) {layer = 0 : i64, num_experts = 1 : i64, top_k = 1 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  %z = fm.moe %y router(%r2 : tensor<2x32xf32>) gate(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g : tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d : tensor<32x16xf32>, tensor<32x16xf32>) {layer = 1 : i64, num_experts = 2 : i64, top_k = 2 : i64, norm_topk_prob} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %z : tensor<?x32xf32>
}
