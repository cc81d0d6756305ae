func.func @yield_outside(%x: tensor<?x8xf32>) {
  fmk.yield %x : tensor<?x8xf32>
}
