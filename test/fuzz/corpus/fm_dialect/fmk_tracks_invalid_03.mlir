func.func @yield_type(%x: tensor<?x8xf32>, %y: tensor<?x4xf32>) {
  %t = fmk.tracks block 0 : tensor<?x8xf32> {
    fmk.yield %y : tensor<?x4xf32>
  }
  return
}
