func.func @ranks(%x: tensor<?x8xf32>) {
  %t:2 = fmk.tracks block 1 {ranks = array<i64: 0>} : tensor<?x8xf32>, tensor<?x8xf32> {
    fmk.yield %x : tensor<?x8xf32>
  }, {
    fmk.yield %x : tensor<?x8xf32>
  }
  return
}
