fm.model @tiny attributes {family = "llama", vocab_size = "128", hidden_size = 64 : i64} {
}
