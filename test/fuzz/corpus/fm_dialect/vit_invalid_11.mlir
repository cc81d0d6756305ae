func.func @registers_1d(%p: tensor<64x32xf32>) -> tensor<65x32xf32> {
  %reg = fm.param "vision.registers" : tensor<32xf32>
  %r = fm.register_tokens %p, %reg : tensor<64x32xf32>, tensor<32xf32> -> tensor<65x32xf32>
  return %r : tensor<65x32xf32>
}
