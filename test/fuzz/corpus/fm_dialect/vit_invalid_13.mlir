// A dynamic token count stays dynamic.
func.func @registers_result_dynamic(%p: tensor<?x32xf32>) -> tensor<65x32xf32> {
  %reg = fm.param "vision.registers" : tensor<1x32xf32>
  %r = fm.register_tokens %p, %reg : tensor<?x32xf32>, tensor<1x32xf32> -> tensor<65x32xf32>
  return %r : tensor<65x32xf32>
}
