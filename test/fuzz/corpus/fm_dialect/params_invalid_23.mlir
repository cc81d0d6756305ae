func.func @f64_param() {
  %w = fm.param "w" : tensor<64xf64>
  return
}
