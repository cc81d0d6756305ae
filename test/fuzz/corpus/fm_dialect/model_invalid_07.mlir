fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64, weights = ["a", "b"]} {
}
