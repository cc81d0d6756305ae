// ODS: the quant attribute must be an #fm.quant.
func.func @quant_not_quant() {
  %w = fm.param "w" {quant = 2 : i64} : tensor<8x64xf32>
  return
}
