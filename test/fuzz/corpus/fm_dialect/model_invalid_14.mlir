// ... as a string.
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  func.func @prefill(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = 0 : i64} {
    return %x : tensor<?x64xf32>
  }
}
