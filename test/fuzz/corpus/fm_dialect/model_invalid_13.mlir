// fm.phase names one of the three phases ...
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  func.func @train(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "train"} {
    return %x : tensor<?x64xf32>
  }
}
