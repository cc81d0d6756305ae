// Bug 8 (bad message): a 1-D expert gate makes MoeOp::verify derive moe_intermediate_size = -1:
// "gate weight 'g' has shape [64], expected [-1, 64] (moe_intermediate_size=-1, ...)". fm.mlp says "up weight must be
// 2-D" in the same situation.
func.func @f(%x: tensor<?x64xf32>, %r: tensor<1x64xf32>, %u: tensor<32x64xf32>, %d: tensor<64x32xf32>) -> tensor<?x64xf32> {
  %g = fm.param "g" : tensor<64xf32>
  %y = fm.moe %x router(%r : tensor<1x64xf32>) gate(%g : tensor<64xf32>) up(%u : tensor<32x64xf32>) down(%d : tensor<64x32xf32>) {layer = 0 : i64, num_experts = 1 : i64, top_k = 1 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
