func.func @storage_and_quant() {
  %w = fm.param "w" {quant = #fm.quant<bits = 2, group = 32, grid = balanced, scale = f16>, storage = f16} : tensor<4x32xf32>
  return
}
