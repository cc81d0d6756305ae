// take_last: the last row and its position, then the head on that one row.
func.func @take_last(%x: tensor<?x64xf32>, %pos: index) -> (tensor<1x128xf32>, index) {
  %w = fm.param "lm_head.weight" : tensor<128x64xf32>
  %row, %last = fm.take_last %x at %pos : tensor<?x64xf32> -> tensor<1x64xf32>
  %l = fm.lm_head %row, %w : tensor<1x64xf32>, tensor<128x64xf32> -> tensor<1x128xf32>
  return %l, %last : tensor<1x128xf32>, index
}
