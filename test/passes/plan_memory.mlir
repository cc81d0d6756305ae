// fm-plan-memory: every activation gets an arena offset (in floats, 64-byte
// aligned), buffers are reused once dead, an accumulating matmul writes into
// its accumulator's buffer, and decode phases are planned for one row.
// RUN: fm-opt %S/Inputs/two_layers.mlir --fm-lower-to-kernels --fm-fuse --fm-plan-memory=max-rows=8 | FileCheck %s
// RUN: fm-opt %S/Inputs/two_layers.mlir --fm-compile=max-rows=8 | FileCheck %s --check-prefix=PIPE

// Arena: the 8x32 residual stream at 0 (256 floats), normalized rows at 256,
// the 8x64 QKV product at 512; the 8x80 gate/up product (640) does not fit
// the 512 floats freed at 512 and goes on top: 1664 floats in all.
// CHECK-LABEL: func.func @prefill
// CHECK-SAME: fmk.arena_floats = 1664 : i64, fmk.max_rows = 8 : i64
// CHECK: fmk.embed {{.*}} {fmk.buffers = array<i64: 0>}
// CHECK: fmk.group "k0"{{.*}} {fmk.buffers = array<i64: 256>}
// CHECK: fmk.matmul {{.*}} {fmk.buffers = array<i64: 512>} : tensor<?x32xf32> -> tensor<?x64xf32>
// The normalized rows (256) are dead after the projection: q reuses them.
// CHECK: fmk.group "k1"{{.*}} {fmk.buffers = array<i64: 256>}
// CHECK: fmk.attention {{.*}} {fmk.buffers = array<i64: 512>
// In place: o_proj accumulates into the residual stream at 0.
// CHECK: fmk.matmul {{.*}} acc({{.*}}) {fmk.buffers = array<i64: 0>}
// CHECK: fmk.matmul {{.*}} {fmk.buffers = array<i64: 1024>} : tensor<?x32xf32> -> tensor<?x80xf32>
// CHECK: fmk.group "k2"{{.*}} {fmk.buffers = array<i64: 256>}
// CHECK: fmk.matmul {{.*}} acc({{.*}}) {fmk.buffers = array<i64: 0>}

// The whole pipeline adds prefill_last: from the reusing layer on, buffers
// hold one row (32 floats).
// PIPE-LABEL: func.func @prefill_last
// PIPE: fmk.take_last {{.*}} {fmk.buffers = array<i64: {{[0-9]+}}, -1>} : tensor<?x32xf32> -> tensor<1x32xf32>
// PIPE: fmk.matmul {{.*}} : tensor<1x32xf32> -> tensor<1x48xf32>
// PIPE: return {{.*}} : tensor<1x48xf32>
