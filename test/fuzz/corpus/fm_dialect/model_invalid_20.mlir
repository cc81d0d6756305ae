// ... directly: a phase function in a module nested in a model does not count.
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  builtin.module {
    func.func @decode(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "decode"} {
      return %x : tensor<?x64xf32>
    }
  }
}
