// Round trip of fm.moe: top-1 and top-2 routing, with and without norm_topk_prob, with a shared expert, inside and outside a model.

// Top-2 of 4 experts with renormalized routing weights (mixtral).
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
