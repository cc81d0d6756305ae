// The prefill_last phase (prefill that only needs the last position's logits).
fm.model @with_prefill_last attributes {family = "afm7", vocab_size = 128 : i64, hidden_size = 64 : i64} {
  func.func @prefill_last(%x: tensor<?x64xf32>, %pos: index) -> (tensor<1x64xf32>, index) attributes {fm.phase = "prefill_last"} {
    %r, %p = fm.take_last %x at %pos : tensor<?x64xf32> -> tensor<1x64xf32>
    return %r, %p : tensor<1x64xf32>, index
  }
  func.func @decode(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> attributes {fm.phase = "decode"} {
    return %x : tensor<?x64xf32>
  }
}
