func.func @storage_type() {
  %w = fm.param "w" {storage = bf16} : tensor<4x4xf32>
  return
}
