func.func @no_tracks() {
  "fmk.tracks"() {block = 0 : i64} : () -> ()
  return
}
