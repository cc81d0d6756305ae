func.func @moe_top5_of_4(%x: tensor<?x32xf32>, %r: tensor<4x32xf32>, %g: tensor<16x32xf32>, %d: tensor<32x16xf32>) -> tensor<?x32xf32> {
  %y = fm.moe %x router(%r : tensor<4x32xf32>) gate(%g, %g, %g, %g : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) up(%g, %g, %g, %g : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) down(%d, %d, %d, %d : tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>) {layer = 7 : i64, num_experts = 4 : i64, top_k = 5 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
