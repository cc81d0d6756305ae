func.func @up_not_2d(%x: tensor<?x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x32xf32> {
  %u = fm.param "fc1.weight" : tensor<48xf32>
  %y = fm.mlp %x up(%u : tensor<48xf32>) down(%d : tensor<32x48xf32>) {layer = 0 : i64, activation = #fm<activation gelu>} : tensor<?x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
