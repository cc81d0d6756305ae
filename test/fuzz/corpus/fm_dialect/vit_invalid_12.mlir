func.func @registers_result(%p: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %reg = fm.param "vision.registers" : tensor<4x32xf32>
  %r = fm.register_tokens %p, %reg : tensor<64x32xf32>, tensor<4x32xf32> -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}
