// ODS: parameters are f32/f16/bf16 (integer data is not a parameter) ...
func.func @int_param() {
  %w = fm.param "w" : tensor<64x64xi8>
  return
}
