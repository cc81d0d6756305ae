// Bug 11 (missing rule): the model description says "one func.func per phase", but two "prefill" functions are
// accepted (ModelOp::lookupPhase silently returns the first).
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  func.func @prefill(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    return %x : tensor<?x64xf32>
  }
  func.func @prefill_again(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    return %x : tensor<?x64xf32>
  }
}
