// KNOWN DIALECT BUG 12 (crash): a track whose block has its argument but no operations makes TrackBlockOp::verify call Block::getTerminator() on an empty block (an out-of-bounds read); fm-opt segfaults or reads garbage, depending on the build. It SHOULD report the missing fm.yield.
// RUN: fm-opt %s -verify-diagnostics
// The read is undefined behaviour and may happen to give the right message; valgrind makes it deterministic.
// RUN: %if valgrind %{ valgrind -q --error-exitcode=99 fm-opt %s -verify-diagnostics %}

func.func @empty_track(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'fm.track_block' op track 0 of block 0 must end with fm.yield}}
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
    track (%t: tensor<?x32xf32>) {
    }
  return %y : tensor<?x32xf32>
}
