// ODS: the position is an index (generic form: the custom syntax fixes both types).
func.func @take_last_pos_i64(%x: tensor<8x64xf32>, %pos: i64) -> tensor<1x64xf32> {
  %r:2 = "fm.take_last"(%x, %pos) : (tensor<8x64xf32>, i64) -> (tensor<1x64xf32>, index)
  return %r#0 : tensor<1x64xf32>
}
