// Bug 6: same in fm.lm_head: "128 vocabulary rows cannot produce logits of width -9223372036854775808".
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x?xf32> {
  %w = fm.param "lm_head.weight" : tensor<128x64xf32>
  %l = fm.lm_head %x, %w : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}
