// Bug 1: same, hidden_size.
fm.model @m attributes {family = "llama", vocab_size = 128 : i64, hidden_size = -64 : i64} {
}
