// Diagnostics of fm.track_block (tracks, depth, track arguments and yields, one KV cache per track), of fm.yield, and of layers inside tracks (their messages name the track; the KV plan across tracks).

func.func @no_tracks(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = fm.track_block %x {block = 0 : i64, depth = 1 : i64, combine = #fm<combine mean>} : tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
