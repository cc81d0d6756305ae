// fm.yield only ends a track.
func.func @yield_outside(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  fm.yield %x : tensor<?x32xf32>
}
