fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 0 : i64} {
}
