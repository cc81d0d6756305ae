func.func @registers_width(%p: tensor<64x32xf32>) -> tensor<65x32xf32> {
  %reg = fm.param "vision.registers" : tensor<1x16xf32>
  %r = fm.register_tokens %p, %reg : tensor<64x32xf32>, tensor<1x16xf32> -> tensor<65x32xf32>
  return %r : tensor<65x32xf32>
}
