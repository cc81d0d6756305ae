// Register tokens prepended: 64 patches + 1 register = 65 tokens; 4 registers on a dynamic count stay dynamic.
func.func @register_tokens(%p: tensor<64x32xf32>, %q: tensor<?x32xf32>) -> (tensor<65x32xf32>, tensor<?x32xf32>) {
  %reg = fm.param "vision.registers" : tensor<1x32xf32>
  %r = fm.register_tokens %p, %reg : tensor<64x32xf32>, tensor<1x32xf32> -> tensor<65x32xf32>
  %reg4 = fm.param "vision.registers4" : tensor<4x32xf32>
  %s = fm.register_tokens %q, %reg4 : tensor<?x32xf32>, tensor<4x32xf32> -> tensor<?x32xf32>
  return %r, %s : tensor<65x32xf32>, tensor<?x32xf32>
}
