// A track with no operations (not even fm.yield) is reported, not a crash (the verifier once called getTerminator() on the empty block).
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
