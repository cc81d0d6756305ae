func.func @key_missing() {
  %w = "fm.param"() : () -> tensor<8x64xf32>
  return
}
