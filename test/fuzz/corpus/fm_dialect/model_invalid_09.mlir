// ODS: two models in one module cannot share a name.
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
}
fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
}
