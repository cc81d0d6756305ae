// The quant attribute's fields may be written in any order; it prints them in declaration order.
func.func @quant_field_order() {
  %a = fm.param "a" {quant = #fm.quant<scale = f16, grid = balanced, group = 64, bits = 4>} : tensor<8x64xf32>
  return
}
