func.func @placed(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %t:3 = fmk.tracks block 3 {ranks = array<i64: 0, 0, 1>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> {
    fmk.yield %x : tensor<?x8xf32>
  }, {
    fmk.yield %x : tensor<?x8xf32>
  }, {
    fmk.yield %x : tensor<?x8xf32>
  }
  %r = fmk.all_reduce %t#0, %t#1, %t#2 {scale = 1.0 : f64, ranks = array<i64: 0, 0, 1>} : tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
