func.func @take_last_width(%x: tensor<8x64xf32>, %pos: index) -> tensor<1x32xf32> {
  %r, %p = fm.take_last %x at %pos : tensor<8x64xf32> -> tensor<1x32xf32>
  return %r : tensor<1x32xf32>
}
