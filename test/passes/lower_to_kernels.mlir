// fm-lower-to-kernels: decoder layers become projections (fmk.matmul
// micro-kernels), row ops (RoPE, head norms, fake-quant, cache writes,
// SwiGLU) and fmk.attention.
// RUN: fm-opt %S/Inputs/two_layers.mlir --fm-lower-to-kernels | FileCheck %s

// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[TOK:.*]]: tensor<?xi32>, %[[POS:.*]]: index)
// CHECK: %[[X:.*]] = fmk.embed %[[TOK]], %{{.*}} : tensor<?xi32>, tensor<48x32xf32> -> tensor<?x32xf32>
// CHECK: %[[N0:.*]] = fmk.rms_norm %[[X]], %{{.*}} {eps = 1.000000e-05 : f64}
// Layer 0: separate projections, half RoPE on q (2 heads) and k (1 head).
// CHECK: %[[Q:.*]] = fmk.matmul %[[N0]] weights(%{{.*}} : tensor<32x32xf32>) : tensor<?x32xf32> -> tensor<?x32xf32>
// CHECK: %[[K:.*]] = fmk.matmul %[[N0]] weights(%{{.*}} : tensor<16x32xf32>) : tensor<?x32xf32> -> tensor<?x16xf32>
// CHECK: %[[V:.*]] = fmk.matmul %[[N0]] weights(%{{.*}} : tensor<16x32xf32>)
// CHECK: %[[QR:.*]] = fmk.rope %[[Q]] at %[[POS]] {head_dim = 16 : i64, num_heads = 2 : i64, style = 1 : i32, theta = 1.000000e+04 : f64} : tensor<?x32xf32>
// CHECK: %[[KR:.*]] = fmk.rope %[[K]] at %[[POS]] {head_dim = 16 : i64, num_heads = 1 : i64, style = 1 : i32
// CHECK: fmk.cache_write %[[KR]] at %[[POS]] into @kv[0] k : tensor<?x16xf32>
// CHECK: fmk.cache_write %[[V]] at %[[POS]] into @kv[0] v : tensor<?x16xf32>
// CHECK: %[[A:.*]] = fmk.attention %[[QR]] at %[[POS]] cache @kv[0] {head_dim = 16 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, scale = 2.500000e-01 : f64, window = 4 : i64}
// CHECK: %[[O:.*]] = fmk.matmul %[[A]] weights(
// CHECK: fmk.add %[[X]], %[[O]]
// SwiGLU MLP: gate and up projections, silu * up, down projection.
// CHECK: %[[G:.*]] = fmk.matmul %{{.*}} weights(%{{.*}} : tensor<40x32xf32>) : tensor<?x32xf32> -> tensor<?x40xf32>
// CHECK: %[[U:.*]] = fmk.matmul %{{.*}} weights(%{{.*}} : tensor<40x32xf32>)
// CHECK: %[[H:.*]] = fmk.silu_mul %[[G]], %[[U]] : tensor<?x40xf32>
// CHECK: fmk.matmul %[[H]] weights(%{{.*}} : tensor<32x40xf32>) : tensor<?x40xf32> -> tensor<?x32xf32>
// Layer 1 (afm7): one fused projection sliced into q, k, v; RoPE, then the
// per-head norms, then int8 fake-quant of k and v before the cache.
// CHECK: %[[P:.*]] = fmk.matmul %{{.*}} weights(%{{.*}} : tensor<64x32xf32>) : tensor<?x32xf32> -> tensor<?x64xf32>
// CHECK: %[[Q1:.*]] = fmk.slice_cols %[[P]][0] : tensor<?x64xf32> -> tensor<?x32xf32>
// CHECK: %[[K1:.*]] = fmk.slice_cols %[[P]][32] : tensor<?x64xf32> -> tensor<?x16xf32>
// CHECK: %[[V1:.*]] = fmk.slice_cols %[[P]][48] : tensor<?x64xf32> -> tensor<?x16xf32>
// CHECK: %[[Q1R:.*]] = fmk.rope %[[Q1]] {{.*}}style = 2 : i32, theta = 5.000000e+05
// CHECK: %[[K1R:.*]] = fmk.rope %[[K1]]
// CHECK: %[[Q1N:.*]] = fmk.head_norm %[[Q1R]], %{{.*}} {eps = 1.000000e-05 : f64, head_dim = 16 : i64, num_heads = 2 : i64}
// CHECK: %[[K1N:.*]] = fmk.head_norm %[[K1R]], %{{.*}} {{.*}}num_heads = 1 : i64}
// CHECK: %[[K1Q:.*]] = fmk.fake_quant %[[K1N]], %{{.*}} : tensor<?x16xf32>, tensor<f32> -> tensor<?x16xf32>
// CHECK: %[[V1Q:.*]] = fmk.fake_quant %[[V1]], %{{.*}} : tensor<?x16xf32>, tensor<f32> -> tensor<?x16xf32>
// CHECK: fmk.cache_write %[[K1Q]] at %[[POS]] into @kv[1] k
// CHECK: fmk.cache_write %[[V1Q]] at %[[POS]] into @kv[1] v
// CHECK: fmk.attention %[[Q1N]] at %[[POS]] cache @kv[1] {head_dim = 16 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, scale = 2.500000e-01 : f64}
// Layer 2 reuses slot 1: a q projection only, and no cache write.
// CHECK: %[[Q2:.*]] = fmk.matmul %{{.*}} weights(%{{.*}} : tensor<32x32xf32>)
// CHECK-NOT: fmk.cache_write
// CHECK: fmk.attention %{{.*}} at %[[POS]] cache @kv[1]
// CHECK: fmk.matmul %{{.*}} weights(%{{.*}} : tensor<48x32xf32>) : tensor<?x32xf32> -> tensor<?x48xf32>
// CHECK-NOT: fm.attention
// CHECK-NOT: fm.mlp
