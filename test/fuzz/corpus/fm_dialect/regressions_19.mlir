// Bug 9 (bad message): TrackBlockOp::parse puts the attr-dict in result.attributes without checking the inherent
// attributes, so a wrongly-typed combine is dropped and reported as "requires attribute 'combine'". The
// declarative ops say "failed to satisfy constraint" (e.g. 'rope' on fm.attention).
func.func @f(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = "mean"} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>) {
      fm.yield %t : tensor<?x32xf32>
    }
  return %y : tensor<?x32xf32>
}
