func.func @take_last_rows(%x: tensor<?x64xf32>, %pos: index) -> tensor<2x64xf32> {
  %r, %p = fm.take_last %x at %pos : tensor<?x64xf32> -> tensor<2x64xf32>
  return %r : tensor<2x64xf32>
}
