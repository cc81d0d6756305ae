// ODS: the file is a string.
func.func @file_not_string() {
  %w = fm.param "w" {file = 3 : i64} : tensor<8x64xf32>
  return
}
