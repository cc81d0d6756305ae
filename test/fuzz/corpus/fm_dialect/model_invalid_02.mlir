// ODS: family, vocab_size and hidden_size are required.
fm.model @tiny attributes {vocab_size = 128 : i64, hidden_size = 64 : i64} {
}
