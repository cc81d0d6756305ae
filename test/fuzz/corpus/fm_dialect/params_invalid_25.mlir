func.func @memref_param() {
  %w = "fm.param"() <{key = "w"}> : () -> memref<64xf32>
  return
}
