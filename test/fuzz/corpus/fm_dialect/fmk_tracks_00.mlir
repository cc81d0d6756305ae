// Round trip of the kernel level's track blocks: fmk.tracks (one region per
// track, yields its output) and the fmk.all_reduce that combines them, in
// one process and placed on ranks.

func.func @two_tracks(%x: tensor<?x8xf32>, %w: tensor<8xf32>) -> tensor<?x8xf32> {
  %t:2 = fmk.tracks block 0 : tensor<?x8xf32>, tensor<?x8xf32> {
    %a = fmk.rms_norm %x, %w {eps = 1.0e-05 : f64} : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
    fmk.yield %a : tensor<?x8xf32>
  }, {
    %b = fmk.add %x, %x : tensor<?x8xf32>
    fmk.yield %b : tensor<?x8xf32>
  }
  %r = fmk.all_reduce %t#0, %t#1 {scale = 0.5 : f64} : tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
