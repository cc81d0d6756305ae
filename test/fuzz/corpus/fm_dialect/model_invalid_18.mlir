// ... and is checked even before its value (a non-function with a bad value names the op).
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = fm.add %x, %x {fm.phase = 3 : i64} : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
