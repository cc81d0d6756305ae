// Bug 4 (bad message): FmDialect::verifyOperationAttribute streams the StringAttr name, which prints quoted:
// "unknown fm attribute '"fm.layer"'".
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  func.func @prefill(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill", fm.layer = 3 : i64} {
    return %x : tensor<?x64xf32>
  }
}
