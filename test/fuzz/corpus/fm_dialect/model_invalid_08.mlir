// ODS: a model is a symbol and needs a symbol table around it (not a function body).
func.func @f() {
  fm.model @tiny attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  }
  return
}
