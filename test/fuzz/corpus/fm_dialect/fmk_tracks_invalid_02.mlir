func.func @negative_rank(%x: tensor<?x8xf32>) {
  %t = fmk.tracks block 0 {ranks = array<i64: -1>} : tensor<?x8xf32> {
    fmk.yield %x : tensor<?x8xf32>
  }
  return
}
