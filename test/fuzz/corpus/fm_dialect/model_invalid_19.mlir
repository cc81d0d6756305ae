// A phase function must sit in an fm.model.
func.func @prefill(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
  return %x : tensor<?x64xf32>
}
