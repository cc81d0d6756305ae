// Diagnostics of the model structure: fm.model's own checks and ODS constraints (attributes, symbol, region), and the fm.phase attribute (FmDialect::verifyOperationAttribute).

fm.model @tiny attributes {family = "llama", vocab_size = 0 : i64, hidden_size = 64 : i64} {
}
