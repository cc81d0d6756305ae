// Phase names are case-sensitive.
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  func.func @decode(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "Decode"} {
    return %x : tensor<?x64xf32>
  }
}
