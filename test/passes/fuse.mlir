// fm-fuse: projections of one input become one matmul over stacked weights,
// residual adds fold into accumulating matmuls, and runs of row ops become
// fmk.group kernels; groups with the same body share a kernel name.
// RUN: fm-opt %S/Inputs/two_layers.mlir --fm-lower-to-kernels --fm-fuse | FileCheck %s

// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[TOK:.*]]: tensor<?xi32>, %[[POS:.*]]: index)
// CHECK-DAG: %[[WQ:.*]] = fm.param "q"
// CHECK-DAG: %[[WK:.*]] = fm.param "k"
// CHECK-DAG: %[[WV:.*]] = fm.param "v"
// CHECK: %[[X:.*]] = fmk.embed
// CHECK: %[[N0:.*]] = fmk.group "k0"(%[[X]], %{{.*}}) : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32> {
// CHECK: fmk.rms_norm
// CHECK-NEXT: fmk.yield
// Q, K and V: one matmul, sliced inside the next group.
// CHECK: %[[QKV:.*]] = fmk.matmul %[[N0]] weights(%[[WQ]], %[[WK]], %[[WV]] : tensor<32x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) : tensor<?x32xf32> -> tensor<?x64xf32>
// CHECK: %[[Q:.*]] = fmk.group "k1"(%[[QKV]], %[[POS]]) : (tensor<?x64xf32>, index) -> tensor<?x32xf32> {
// CHECK-NEXT: ^bb0(%[[P:.*]]: tensor<?x64xf32>, %[[GPOS:.*]]: index):
// CHECK-NEXT: %[[QS:.*]] = fmk.slice_cols %[[P]][0]
// CHECK-NEXT: %[[KS:.*]] = fmk.slice_cols %[[P]][32]
// CHECK-NEXT: %[[VS:.*]] = fmk.slice_cols %[[P]][48]
// CHECK-NEXT: %[[QR:.*]] = fmk.rope %[[QS]] at %[[GPOS]]
// CHECK-NEXT: %[[KR:.*]] = fmk.rope %[[KS]] at %[[GPOS]]
// CHECK-NEXT: fmk.cache_write %[[KR]] at %[[GPOS]] into @kv[0] k
// CHECK-NEXT: fmk.cache_write %[[VS]] at %[[GPOS]] into @kv[0] v
// CHECK-NEXT: fmk.yield %[[QR]] : tensor<?x32xf32>
// CHECK: %[[A:.*]] = fmk.attention %[[Q]] at %[[POS]]
// The residual add is folded: o_proj accumulates into the embedding rows.
// CHECK: %[[H:.*]] = fmk.matmul %[[A]] weights(%{{.*}} : tensor<32x32xf32>) acc(%[[X]] : tensor<?x32xf32>)
// CHECK-NOT: fmk.add
// The same RMSNorm kernel again; gate and up stacked; SwiGLU on the slices.
// CHECK: fmk.group "k0"(%[[H]],
// CHECK: %[[GU:.*]] = fmk.matmul %{{.*}} weights(%{{.*}}, %{{.*}} : tensor<40x32xf32>, tensor<40x32xf32>) : tensor<?x32xf32> -> tensor<?x80xf32>
// CHECK: fmk.group "k2"(%[[GU]]) : (tensor<?x80xf32>) -> tensor<?x40xf32>
// CHECK: fmk.silu_mul
// CHECK: fmk.matmul %{{.*}} weights(%{{.*}} : tensor<32x40xf32>) acc(%[[H]] : tensor<?x32xf32>)
// afm7 layer: RoPE, head norms, fake-quant and both cache writes in one kernel.
// CHECK: fmk.group "k3"
// CHECK: fmk.head_norm
// CHECK: fmk.fake_quant
// CHECK: fmk.cache_write {{.*}} into @kv[1] v
// The reusing layer: RoPE + q norm only.
// CHECK: fmk.group "k4"
// CHECK-NOT: cache_write
// CHECK: fmk.yield
// CHECK: fmk.group "k0"
// CHECK: return
