// fm-plan-memory rounds every buffer up to 64 bytes (16 floats): with a
// 24-wide residual stream and one row, the normalized rows start at 32, not
// 24, and the 40-wide gate|up product at 64, not 48 (112 floats in all, not
// 88). The CPU kernels' aligned vector loads and the Panel16 copies rely on it.
// RUN: fm-opt %s --fm-lower-to-kernels --fm-fuse --fm-plan-memory=max-rows=1 | FileCheck %s

// CHECK-LABEL: func.func @prefill
// CHECK-SAME: fmk.arena_floats = 112 : i64
// CHECK: fmk.embed {{.*}} {fmk.buffers = array<i64: 0>}
// CHECK: fmk.group "k0"{{.*}} {fmk.buffers = array<i64: 32>}
// CHECK: fmk.matmul {{.*}} {fmk.buffers = array<i64: 64>} : tensor<?x24xf32> -> tensor<?x40xf32>
// CHECK: fmk.group "k1"{{.*}} {fmk.buffers = array<i64: 32>}
// CHECK: fmk.matmul {{.*}} acc({{.*}}) {fmk.buffers = array<i64: 0>}
fm.model @odd attributes {family = "llama", hidden_size = 24 : i64, vocab_size = 40 : i64} {
  func.func @prefill(%tokens: tensor<?xi32>, %pos: index) -> tensor<?x40xf32> attributes {fm.phase = "prefill"} {
    %emb = fm.param "emb" : tensor<40x24xf32>
    %nw = fm.param "norm" : tensor<24xf32>
    %g = fm.param "gate" : tensor<20x24xf32>
    %u = fm.param "up" : tensor<20x24xf32>
    %d = fm.param "down" : tensor<24x20xf32>
    %x = fm.embedding %tokens, %emb : tensor<?xi32>, tensor<40x24xf32> -> tensor<?x24xf32>
    %m0 = fm.rms_norm %x, %nw {eps = 1.0e-05 : f64} : tensor<?x24xf32>, tensor<24xf32> -> tensor<?x24xf32>
    %f0 = fm.mlp %m0 gate(%g : tensor<20x24xf32>) up(%u : tensor<20x24xf32>) down(%d : tensor<24x20xf32>) {activation = #fm<activation swiglu>, layer = 0 : i64} : tensor<?x24xf32> -> tensor<?x24xf32>
    %x2 = fm.add %x, %f0 : tensor<?x24xf32>
    %n3 = fm.rms_norm %x2, %nw {eps = 1.0e-05 : f64} : tensor<?x24xf32>, tensor<24xf32> -> tensor<?x24xf32>
    %l = fm.lm_head %n3, %emb {tied} : tensor<?x24xf32>, tensor<40x24xf32> -> tensor<?x40xf32>
    return %l : tensor<?x40xf32>
  }
}
