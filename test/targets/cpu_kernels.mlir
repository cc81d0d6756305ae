// RUN: fm-opt %s --split-input-file --fm-cpu-build-kernels | FileCheck %s

// One kernel per group: rank-0 memref pointers (inputs, results), rows, pos;
// shaped views by reinterpret_cast; one scf.for over the rows.
// CHECK-LABEL: func.func @fmk_layers_0_input_norm_rows
// CHECK-SAME:    (%[[X:.*]]: memref<f32>, %[[W:.*]]: memref<f32>, %[[Y:.*]]: memref<f32>, %[[ROWS:.*]]: index, %[[POS:.*]]: index)
// CHECK-SAME:    fmk.entry = "fmk_layers_0_input_norm_entry", fmk.num_pointers = 3
// CHECK-DAG:   %[[XV:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [%[[ROWS]], 64], strides: [64, 1] : memref<f32> to memref<?x64xf32>
// CHECK-DAG:   %[[WV:.*]] = memref.reinterpret_cast %[[W]] to offset: [0], sizes: [64], strides: [1] : memref<f32> to memref<64xf32>
// CHECK-DAG:   %[[YV:.*]] = memref.reinterpret_cast %[[Y]] to offset: [0], sizes: [%[[ROWS]], 64], strides: [64, 1] : memref<f32> to memref<?x64xf32>
// CHECK-NOT:   memref.alloca
// CHECK:       scf.for %[[R:.*]] = %{{.*}} to %[[ROWS]] step
// Sum of squares, reassociable so that LLVM vectorizes it.
// CHECK:         %[[SS:.*]] = scf.for %[[J:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK:           %[[V:.*]] = memref.load %[[XV]][%[[R]], %[[J]]] : memref<?x64xf32>
// CHECK:           %[[SQ:.*]] = arith.mulf %[[V]], %[[V]]
// CHECK:           arith.addf %[[ACC]], %[[SQ]] fastmath<reassoc,contract>
// CHECK:         %[[MEAN:.*]] = arith.divf %[[SS]], %{{.*}} : f32
// CHECK:         %[[VAR:.*]] = arith.addf %[[MEAN]], %{{.*}} : f32
// CHECK:         %[[RMS:.*]] = math.sqrt %[[VAR]]
// CHECK:         %[[INV:.*]] = arith.divf %{{.*}}, %[[RMS]]
// CHECK:         scf.for %[[J2:.*]] =
// CHECK:           %[[X2:.*]] = memref.load %[[XV]][%[[R]], %[[J2]]]
// CHECK:           %[[XN:.*]] = arith.mulf %[[X2]], %[[INV]]
// CHECK:           %[[G:.*]] = memref.load %[[WV]][%[[J2]]] : memref<64xf32>
// CHECK:           %[[O:.*]] = arith.mulf %[[XN]], %[[G]]
// CHECK:           memref.store %[[O]], %[[YV]][%[[R]], %[[J2]]] : memref<?x64xf32>
// CHECK:       return
func.func @norm(%x: tensor<?x64xf32>, %w: tensor<64xf32>) -> tensor<?x64xf32> {
  %r = fmk.group "layers.0.input_norm" (%x, %w) : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>, %b: tensor<64xf32>):
    %n = fmk.rms_norm %a, %b {eps = 1.0e-05 : f64} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    fmk.yield %n : tensor<?x64xf32>
  }
  return %r : tensor<?x64xf32>
}

// -----

// Intermediates live in scratch rows allocated once, before the row loop.
// SwiGLU reads the two halves of one input through column offsets.
// CHECK-LABEL: func.func @fmk_mlp_rows
// CHECK-SAME:    (%[[GU:.*]]: memref<f32>, %[[B:.*]]: memref<f32>, %[[OUT:.*]]: memref<f32>, %[[ROWS:.*]]: index, %{{.*}}: index)
// CHECK-DAG:   %[[C48:.*]] = arith.constant 48 : index
// CHECK-DAG:   %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG:   %[[GUV:.*]] = memref.reinterpret_cast %[[GU]] {{.*}} sizes: [%[[ROWS]], 96]
// CHECK:       %[[S:.*]] = memref.alloca() {alignment = 64 : i64} : memref<48xf32>
// CHECK:       scf.for %[[R:.*]] = %{{.*}} to %[[ROWS]]
// CHECK-NOT:     memref.alloca
// CHECK:         scf.for %[[J:.*]] =
// CHECK:           %[[G:.*]] = memref.load %[[GUV]][%[[R]], %[[J]]]
// CHECK:           %[[NG:.*]] = arith.negf %[[G]]
// CHECK:           %[[E:.*]] = math.exp %[[NG]]
// CHECK:           %[[DEN:.*]] = arith.addf %[[E]], %[[ONE]]
// CHECK:           %[[SILU:.*]] = arith.divf %[[G]], %[[DEN]]
// CHECK:           %[[JU:.*]] = arith.addi %[[J]], %[[C48]]
// CHECK:           %[[U:.*]] = memref.load %[[GUV]][%[[R]], %[[JU]]]
// CHECK:           %[[P:.*]] = arith.mulf %[[SILU]], %[[U]]
// CHECK:           memref.store %[[P]], %[[S]][%[[J]]] : memref<48xf32>
// Bias add from the scratch row into the result row.
// CHECK:         scf.for %[[J2:.*]] =
// CHECK:           %[[H:.*]] = memref.load %[[S]][%[[J2]]]
// CHECK:           %[[BV:.*]] = memref.load %{{.*}}[%[[J2]]] : memref<48xf32>
// CHECK:           %[[SUM:.*]] = arith.addf %[[H]], %[[BV]]
// CHECK:           memref.store %[[SUM]], %{{.*}}[%[[R]], %[[J2]]] : memref<?x48xf32>
// CHECK-NOT:   memref.alloca
func.func @mlp(%gu: tensor<?x96xf32>, %b: tensor<48xf32>) -> tensor<?x48xf32> {
  %r = fmk.group "mlp" (%gu, %b) : (tensor<?x96xf32>, tensor<48xf32>) -> tensor<?x48xf32> {
  ^bb0(%a: tensor<?x96xf32>, %c: tensor<48xf32>):
    %g = fmk.slice_cols %a[0] : tensor<?x96xf32> -> tensor<?x48xf32>
    %u = fmk.slice_cols %a[48] : tensor<?x96xf32> -> tensor<?x48xf32>
    %y = fmk.silu_mul %g, %u : tensor<?x48xf32>
    %z = fmk.add_bias %y, %c : tensor<?x48xf32>, tensor<48xf32> -> tensor<?x48xf32>
    fmk.yield %z : tensor<?x48xf32>
  }
  return %r : tensor<?x48xf32>
}

// -----

// RoPE (half): a constant f64 table of theta^(-2i/head_dim); cos/sin in f64
// once per row and pair index, into two scratch rows; then every head.
// CHECK:       memref.global "private" constant @fmk_rope_freqs : memref<4xf64> = dense<[1.000000e+00, 1.000000e-01, 1.000000e-02, 1.000000e-03]>
// CHECK-LABEL: func.func @fmk_rope_half_rows
// CHECK-SAME:    (%[[X:.*]]: memref<f32>, %[[Y:.*]]: memref<f32>, %[[ROWS:.*]]: index, %[[POS:.*]]: index)
// CHECK-DAG:   %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:   %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:   %[[C2:.*]] = arith.constant 2 : index
// CHECK:       %[[COS:.*]] = memref.alloca() {{.*}} : memref<4xf32>
// CHECK:       %[[SIN:.*]] = memref.alloca() {{.*}} : memref<4xf32>
// CHECK:       scf.for %[[R:.*]] = %{{.*}} to %[[ROWS]]
// CHECK:         %[[F:.*]] = memref.get_global @fmk_rope_freqs : memref<4xf64>
// CHECK:         %[[P:.*]] = arith.addi %[[POS]], %[[R]] : index
// CHECK:         %[[PI:.*]] = arith.index_cast %[[P]] : index to i64
// CHECK:         %[[PF:.*]] = arith.sitofp %[[PI]] : i64 to f64
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %[[C4]]
// CHECK:           %[[FI:.*]] = memref.load %[[F]][%[[I]]] : memref<4xf64>
// CHECK:           %[[A:.*]] = arith.mulf %[[PF]], %[[FI]] : f64
// CHECK:           %[[CD:.*]] = math.cos %[[A]] : f64
// CHECK:           %[[CF:.*]] = arith.truncf %[[CD]] : f64 to f32
// CHECK:           %[[SD:.*]] = math.sin %[[A]] : f64
// CHECK:           %[[SF:.*]] = arith.truncf %[[SD]] : f64 to f32
// CHECK:           memref.store %[[CF]], %[[COS]][%[[I]]]
// CHECK:           memref.store %[[SF]], %[[SIN]][%[[I]]]
// CHECK:         scf.for %[[H:.*]] = %{{.*}} to %[[C2]]
// CHECK:           %[[BASE:.*]] = arith.muli %[[H]], %[[C8]]
// CHECK:           scf.for %[[I2:.*]] = %{{.*}} to %[[C4]]
// CHECK:             %[[IA:.*]] = arith.addi %[[BASE]], %[[I2]]
// CHECK:             %[[IB:.*]] = arith.addi %[[IA]], %[[C4]]
// CHECK:             %[[VA:.*]] = memref.load %{{.*}}[%[[R]], %[[IA]]]
// CHECK:             %[[VB:.*]] = memref.load %{{.*}}[%[[R]], %[[IB]]]
// CHECK:             %[[C:.*]] = memref.load %[[COS]][%[[I2]]]
// CHECK:             %[[S:.*]] = memref.load %[[SIN]][%[[I2]]]
// CHECK:             %[[AC:.*]] = arith.mulf %[[VA]], %[[C]]
// CHECK:             %[[BS:.*]] = arith.mulf %[[VB]], %[[S]]
// CHECK:             %[[OA:.*]] = arith.subf %[[AC]], %[[BS]]
// CHECK:             memref.store %[[OA]], %{{.*}}[%[[R]], %[[IA]]]
// CHECK:             %[[BC:.*]] = arith.mulf %[[VB]], %[[C]]
// CHECK:             %[[AS:.*]] = arith.mulf %[[VA]], %[[S]]
// CHECK:             %[[OB:.*]] = arith.addf %[[BC]], %[[AS]]
// CHECK:             memref.store %[[OB]], %{{.*}}[%[[R]], %[[IB]]]
func.func @rope(%x: tensor<?x16xf32>, %pos: index) -> tensor<?x16xf32> {
  %r = fmk.group "rope_half" (%x, %pos) : (tensor<?x16xf32>, index) -> tensor<?x16xf32> {
  ^bb0(%a: tensor<?x16xf32>, %p: index):
    %y = fmk.rope %a at %p {num_heads = 2 : i64, head_dim = 8 : i64, theta = 1.0e+04 : f64, style = 1 : i32} : tensor<?x16xf32>
    fmk.yield %y : tensor<?x16xf32>
  }
  return %r : tensor<?x16xf32>
}

// -----

// Interleaved RoPE pairs columns (2i, 2i + 1).
// CHECK-LABEL: func.func @fmk_rope_interleaved_rows
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK:         math.sin
// CHECK:         scf.for %[[H:.*]] = %{{.*}} to %[[C2]]
// CHECK:           scf.for %[[I:.*]] = %{{.*}} to %[[C4]]
// CHECK:             %[[I2:.*]] = arith.muli %[[I]], %[[C2]]
// CHECK:             %[[IA:.*]] = arith.addi %{{.*}}, %[[I2]]
// CHECK:             %[[IB:.*]] = arith.addi %[[IA]], %[[C1]]
// CHECK:             memref.load %{{.*}}[%{{.*}}, %[[IA]]]
// CHECK:             memref.load %{{.*}}[%{{.*}}, %[[IB]]]
func.func @rope_i(%x: tensor<?x16xf32>, %pos: index) -> tensor<?x16xf32> {
  %r = fmk.group "rope_interleaved" (%x, %pos) : (tensor<?x16xf32>, index) -> tensor<?x16xf32> {
  ^bb0(%a: tensor<?x16xf32>, %p: index):
    %y = fmk.rope %a at %p {num_heads = 2 : i64, head_dim = 8 : i64, theta = 1.0e+04 : f64, style = 2 : i32} : tensor<?x16xf32>
    fmk.yield %y : tensor<?x16xf32>
  }
  return %r : tensor<?x16xf32>
}

// -----

// head_norm: one sum of squares per head, the shared weight indexed by the
// column within the head. fake_quant: the 0-d scale is one float.
// cache_write: the slot pointer viewed as [pos + rows][width], row pos + r.
// CHECK-LABEL: func.func @fmk_kv_rows
// CHECK-SAME:    (%[[K:.*]]: memref<f32>, %[[WK:.*]]: memref<f32>, %[[SC:.*]]: memref<f32>, %[[OUT:.*]]: memref<f32>, %[[SLOT:.*]]: memref<f32>, %[[ROWS:.*]]: index, %[[POS:.*]]: index)
// CHECK-SAME:    fmk.num_pointers = 5
// CHECK-DAG:   %[[CM128:.*]] = arith.constant -1.280000e+02 : f32
// CHECK-DAG:   %[[C127:.*]] = arith.constant 1.270000e+02 : f32
// CHECK-DAG:   %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG:   %[[WKV:.*]] = memref.reinterpret_cast %[[WK]] {{.*}} : memref<f32> to memref<16xf32>
// CHECK-DAG:   %[[END:.*]] = arith.addi %[[POS]], %[[ROWS]] : index
// CHECK-DAG:   %[[SLOTV:.*]] = memref.reinterpret_cast %[[SLOT]] to offset: [0], sizes: [%[[END]], 32], strides: [32, 1] : memref<f32> to memref<?x32xf32>
// CHECK:       %[[NORMED:.*]] = memref.alloca() {{.*}} : memref<32xf32>
// CHECK:       scf.for %[[R:.*]] =
// CHECK:         scf.for %[[H:.*]] =
// CHECK:           %[[HB:.*]] = arith.muli %[[H]], %[[C16]]
// CHECK:           scf.for {{.*}} iter_args
// CHECK:             arith.addf {{.*}} fastmath<reassoc,contract>
// CHECK:           math.sqrt
// CHECK:           scf.for %[[I:.*]] =
// CHECK:             %[[COL:.*]] = arith.addi %[[HB]], %[[I]]
// CHECK:             memref.load %[[WKV]][%[[I]]] : memref<16xf32>
// CHECK:             memref.store %{{.*}}, %[[NORMED]][%[[COL]]]
// CHECK:         %[[S:.*]] = memref.load %[[SC]][] : memref<f32>
// CHECK:         scf.for %[[J:.*]] =
// CHECK:           %[[V:.*]] = memref.load %[[NORMED]][%[[J]]]
// CHECK:           %[[D:.*]] = arith.divf %[[V]], %[[S]]
// CHECK:           %[[Q:.*]] = math.roundeven %[[D]]
// CHECK:           %[[LT:.*]] = arith.cmpf olt, %[[Q]], %[[CM128]]
// CHECK:           %[[Q1:.*]] = arith.select %[[LT]], %[[CM128]], %[[Q]]
// CHECK:           %[[GT:.*]] = arith.cmpf ogt, %[[Q1]], %[[C127]]
// CHECK:           %[[Q2:.*]] = arith.select %[[GT]], %[[C127]], %[[Q1]]
// CHECK:           %[[DQ:.*]] = arith.mulf %[[Q2]], %[[S]]
// CHECK:           memref.store %[[DQ]], %{{.*}}[%[[R]], %[[J]]] : memref<?x32xf32>
// CHECK:         %[[P:.*]] = arith.addi %[[POS]], %[[R]]
// CHECK:         scf.for %[[J2:.*]] =
// CHECK:           %[[W:.*]] = memref.load %{{.*}}[%[[R]], %[[J2]]] : memref<?x32xf32>
// CHECK:           memref.store %[[W]], %[[SLOTV]][%[[P]], %[[J2]]] : memref<?x32xf32>
func.func @kv(%k: tensor<?x32xf32>, %wk: tensor<16xf32>, %s: tensor<f32>, %pos: index) -> tensor<?x32xf32> {
  %r = fmk.group "kv" (%k, %wk, %s, %pos) : (tensor<?x32xf32>, tensor<16xf32>, tensor<f32>, index) -> tensor<?x32xf32> {
  ^bb0(%a: tensor<?x32xf32>, %w: tensor<16xf32>, %sc: tensor<f32>, %p: index):
    %n = fmk.head_norm %a, %w {num_heads = 2 : i64, head_dim = 16 : i64, eps = 1.0e-06 : f64} : tensor<?x32xf32>, tensor<16xf32> -> tensor<?x32xf32>
    %q = fmk.fake_quant %n, %sc : tensor<?x32xf32>, tensor<f32> -> tensor<?x32xf32>
    fmk.cache_write %q at %p into @kv[3] k : tensor<?x32xf32>
    fmk.yield %q : tensor<?x32xf32>
  }
  return %r : tensor<?x32xf32>
}

// -----

// A yielded value goes straight to its result row once no later op reads an
// input row (results may alias inputs); otherwise it is computed into scratch
// and copied at the end of the row. Here both the residual sum and the norm
// go straight to their result rows.
// CHECK-LABEL: func.func @fmk_resid_rows
// CHECK-SAME:    (%[[X:.*]]: memref<f32>, %[[D:.*]]: memref<f32>, %[[W:.*]]: memref<f32>, %[[R0:.*]]: memref<f32>, %[[R1:.*]]: memref<f32>, %[[ROWS:.*]]: index
// CHECK-DAG:   %[[XV:.*]] = memref.reinterpret_cast %[[X]]
// CHECK-DAG:   %[[R0V:.*]] = memref.reinterpret_cast %[[R0]]
// CHECK-DAG:   %[[R1V:.*]] = memref.reinterpret_cast %[[R1]]
// CHECK:       scf.for %[[R:.*]] =
// CHECK:         scf.for %[[J:.*]] =
// CHECK:           %[[A:.*]] = arith.addf
// CHECK:           memref.store %[[A]], %[[R0V]][%[[R]], %[[J]]]
// CHECK:         scf.for
// CHECK:           memref.load %[[R0V]]
// CHECK:         scf.for
// CHECK:           memref.store %{{.*}}, %[[R1V]]
func.func @resid(%x: tensor<?x32xf32>, %d: tensor<?x32xf32>, %w: tensor<32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  %r:2 = fmk.group "resid" (%x, %d, %w) : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  ^bb0(%a: tensor<?x32xf32>, %b: tensor<?x32xf32>, %c: tensor<32xf32>):
    %s = fmk.add %a, %b : tensor<?x32xf32>
    %n = fmk.rms_norm %s, %c {eps = 1.0e-05 : f64} : tensor<?x32xf32>, tensor<32xf32> -> tensor<?x32xf32>
    fmk.yield %s, %n : tensor<?x32xf32>, tensor<?x32xf32>
  }
  return %r#0, %r#1 : tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// A passthrough input is a read at the end of the row: the sum waits in
// scratch and both results are copied.
// CHECK-LABEL: func.func @fmk_pass_rows
// CHECK-SAME:    (%[[X:.*]]: memref<f32>, %[[D:.*]]: memref<f32>, %[[R0:.*]]: memref<f32>, %[[R1:.*]]: memref<f32>,
// CHECK-DAG:   %[[XV:.*]] = memref.reinterpret_cast %[[X]]
// CHECK-DAG:   %[[R0V:.*]] = memref.reinterpret_cast %[[R0]]
// CHECK-DAG:   %[[R1V:.*]] = memref.reinterpret_cast %[[R1]]
// CHECK:       %[[S:.*]] = memref.alloca() {{.*}} : memref<32xf32>
// CHECK:       scf.for %[[R:.*]] =
// CHECK:         scf.for %[[J:.*]] =
// CHECK:           memref.store %{{.*}}, %[[S]][%[[J]]]
// CHECK:         scf.for %[[J1:.*]] =
// CHECK:           %[[V0:.*]] = memref.load %[[XV]][%[[R]], %[[J1]]]
// CHECK:           memref.store %[[V0]], %[[R0V]][%[[R]], %[[J1]]]
// CHECK:         scf.for %[[J2:.*]] =
// CHECK:           %[[V1:.*]] = memref.load %[[S]][%[[J2]]]
// CHECK:           memref.store %[[V1]], %[[R1V]][%[[R]], %[[J2]]]
func.func @pass(%x: tensor<?x32xf32>, %d: tensor<?x32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  %r:2 = fmk.group "pass" (%x, %d) : (tensor<?x32xf32>, tensor<?x32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  ^bb0(%a: tensor<?x32xf32>, %b: tensor<?x32xf32>):
    %s = fmk.add %a, %b : tensor<?x32xf32>
    fmk.yield %a, %s : tensor<?x32xf32>, tensor<?x32xf32>
  }
  return %r#0, %r#1 : tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// fm-fuse names structurally equal groups alike: one kernel serves both.
// CHECK-LABEL: func.func @fmk_k0_rows
// CHECK-NOT:   func.func
func.func @shared(%x: tensor<?x16xf32>, %w: tensor<16xf32>, %w2: tensor<16xf32>) -> tensor<?x16xf32> {
  %r = fmk.group "k0" (%x, %w) : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32> {
  ^bb0(%a: tensor<?x16xf32>, %b: tensor<16xf32>):
    %n = fmk.rms_norm %a, %b {eps = 1.0e-05 : f64} : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
    fmk.yield %n : tensor<?x16xf32>
  }
  %s = fmk.group "k0" (%r, %w2) : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32> {
  ^bb0(%a: tensor<?x16xf32>, %b: tensor<16xf32>):
    %n = fmk.rms_norm %a, %b {eps = 1.0e-05 : f64} : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
    fmk.yield %n : tensor<?x16xf32>
  }
  return %s : tensor<?x16xf32>
}
