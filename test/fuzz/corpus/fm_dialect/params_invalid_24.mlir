// ... and ranked tensors.
func.func @unranked_param() {
  %w = fm.param "w" : tensor<*xf32>
  return
}
