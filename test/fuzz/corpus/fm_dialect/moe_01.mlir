// Top-2 of 4 without renormalization (qwen2_moe keeps the raw softmax weights).
func.func @moe_top2_raw(%x: tensor<?x32xf32>, %r: tensor<4x32xf32>, %g: tensor<24x32xf32>, %d: tensor<32x24xf32>) -> tensor<?x32xf32> {
  %y = fm.moe %x router(%r : tensor<4x32xf32>) gate(%g, %g, %g, %g : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) up(%g, %g, %g, %g : tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>, tensor<24x32xf32>) down(%d, %d, %d, %d : tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x24xf32>) {layer = 0 : i64, num_experts = 4 : i64, top_k = 2 : i64} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
