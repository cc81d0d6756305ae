// ODS: the key is a required string.
func.func @key_not_string() {
  %w = "fm.param"() <{key = 3 : i64}> : () -> tensor<8x64xf32>
  return
}
