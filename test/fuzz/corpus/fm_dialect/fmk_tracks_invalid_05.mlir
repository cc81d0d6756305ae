func.func @reduce_ranks(%x: tensor<?x8xf32>) {
  %r = fmk.all_reduce %x, %x {scale = 1.0 : f64, ranks = array<i64: 0>} : tensor<?x8xf32>
  return
}
