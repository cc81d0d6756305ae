func.func @add_f16(%x: tensor<?x64xf16>) -> tensor<?x64xf16> {
  %z = fm.add %x, %x : tensor<?x64xf16>
  return %z : tensor<?x64xf16>
}
