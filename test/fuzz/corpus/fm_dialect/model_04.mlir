// A model may hold helper functions without fm.phase next to its phases, and
// the same model may sit next to other modules' content.
fm.model @with_helper attributes {family = "llama", vocab_size = 8 : i64, hidden_size = 64 : i64} {
  fm.kv_cache @kv layers(1) kv_heads(1) head_dim(64) capacity(16) : f32
  func.func private @helper(tensor<?x64xf32>) -> tensor<?x64xf32>
  func.func @decode(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "decode"} {
    return %x : tensor<?x64xf32>
  }
}
func.func @outside(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  return %x : tensor<?x64xf32>
}
