// ODS: ... and isolated from above: a nested model cannot use a value of the enclosing model.
fm.model @outer attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  %w = fm.param "w" : tensor<4x64xf32>
  fm.model @inner attributes {family = "llama", vocab_size = 128 : i64, hidden_size = 64 : i64} {
    %y = fm.add %w, %w : tensor<4x64xf32>
  }
}
