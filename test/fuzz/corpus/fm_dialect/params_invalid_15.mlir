// The quant attribute is checked wherever it appears, not only on fm.param.
func.func @standalone_attr() attributes {recipe = #fm.quant<bits = 5, group = 64, grid = balanced, scale = f16>} {
  return
}
