// Bug 6: same in fm.take_last: "take_last of [?, ?] must give [1, -9223372036854775808], got [1, 64]".
func.func @f(%x: tensor<?x?xf32>, %pos: index) -> tensor<1x64xf32> {
  %r, %p = fm.take_last %x at %pos : tensor<?x?xf32> -> tensor<1x64xf32>
  return %r : tensor<1x64xf32>
}
