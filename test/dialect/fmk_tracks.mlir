// Round trip of the kernel level's track blocks: fmk.tracks (one region per
// track, yields its output) and the fmk.all_reduce that combines them, in
// one process and placed on ranks.
// RUN: fm-opt %s -split-input-file | fm-opt -split-input-file | FileCheck %s
// RUN: fm-opt %s -split-input-file > %t.1 && fm-opt %t.1 -split-input-file > %t.2 && diff %t.1 %t.2

// CHECK-LABEL: func.func @two_tracks
// CHECK: %[[T:.*]]:2 = fmk.tracks block 0 : tensor<?x8xf32>, tensor<?x8xf32> {
// CHECK: fmk.yield %{{.*}} : tensor<?x8xf32>
// CHECK: }, {
// CHECK: fmk.all_reduce %[[T]]#0, %[[T]]#1 {scale = 5.000000e-01 : f64} : tensor<?x8xf32>
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

// -----

// CHECK-LABEL: func.func @placed
// CHECK: fmk.tracks block 3 {ranks = array<i64: 0, 0, 1>}
// CHECK: fmk.all_reduce {{.*}} {ranks = array<i64: 0, 0, 1>, scale = 1.000000e+00 : f64}
func.func @placed(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %t:3 = fmk.tracks block 3 {ranks = array<i64: 0, 0, 1>} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> {
    fmk.yield %x : tensor<?x8xf32>
  }, {
    fmk.yield %x : tensor<?x8xf32>
  }, {
    fmk.yield %x : tensor<?x8xf32>
  }
  %r = fmk.all_reduce %t#0, %t#1, %t#2 {scale = 1.0 : f64, ranks = array<i64: 0, 0, 1>} : tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
