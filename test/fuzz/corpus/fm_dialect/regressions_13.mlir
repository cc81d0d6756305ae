// Bug 5 (bad message): a tied lm_head whose weight is not an fm.param prints an empty name and a double space:
// "lm_head is tied, but its weight  is not the token embedding table".
func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>) -> tensor<?x128xf32> {
  %l = fm.lm_head %x, %w {tied} : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %l : tensor<?x128xf32>
}
