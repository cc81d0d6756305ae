// RUN: fm-opt %s --split-input-file --fm-cpu-build-kernels --verify-diagnostics

func.func @rope_width(%x: tensor<?x64xf32>, %pos: index) -> tensor<?x64xf32> {
  %r = fmk.group "g" (%x, %pos) : (tensor<?x64xf32>, index) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>, %p: index):
    // expected-error @+1 {{needs an even head_dim and num_heads * head_dim = 64 columns}}
    %y = fmk.rope %a at %p {num_heads = 4 : i64, head_dim = 8 : i64, theta = 1.0e+04 : f64, style = 1 : i32} : tensor<?x64xf32>
    fmk.yield %y : tensor<?x64xf32>
  }
  return %r : tensor<?x64xf32>
}

// -----

func.func @head_norm_weight(%x: tensor<?x64xf32>, %w: tensor<32xf32>) -> tensor<?x64xf32> {
  %r = fmk.group "g" (%x, %w) : (tensor<?x64xf32>, tensor<32xf32>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>, %b: tensor<32xf32>):
    // expected-error @+1 {{weight has 32 elements, expected 16}}
    %y = fmk.head_norm %a, %b {num_heads = 4 : i64, head_dim = 16 : i64, eps = 1.0e-06 : f64} : tensor<?x64xf32>, tensor<32xf32> -> tensor<?x64xf32>
    fmk.yield %y : tensor<?x64xf32>
  }
  return %r : tensor<?x64xf32>
}

// -----

func.func @weight_and_rows(%w: tensor<1x16xf32>) -> tensor<1x16xf32> {
  // expected-error @+1 {{input #0 is used both as a weight and as activation rows}}
  %r = fmk.group "g" (%w) : (tensor<1x16xf32>) -> tensor<1x16xf32> {
  ^bb0(%b: tensor<1x16xf32>):
    %n = fmk.rms_norm %b, %b {eps = 1.0e-05 : f64} : tensor<1x16xf32>, tensor<1x16xf32> -> tensor<1x16xf32>
    fmk.yield %n : tensor<1x16xf32>
  }
  return %r : tensor<1x16xf32>
}

// -----

func.func @not_a_row_op(%x: tensor<?x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x16xf32> {
  %r = fmk.group "g" (%x, %w) : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32> {
  ^bb0(%a: tensor<?x16xf32>, %b: tensor<16x16xf32>):
    // expected-error @+1 {{is not a row op the CPU target can compile}}
    %y = fmk.matmul %a weights(%b : tensor<16x16xf32>) : tensor<?x16xf32> -> tensor<?x16xf32>
    fmk.yield %y : tensor<?x16xf32>
  }
  return %r : tensor<?x16xf32>
}

// -----

func.func @symbol_clash(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %r = fmk.group "a.b" (%x) : (tensor<?x16xf32>) -> tensor<?x16xf32> {
  ^bb0(%a: tensor<?x16xf32>):
    %y = fmk.add %a, %a : tensor<?x16xf32>
    fmk.yield %y : tensor<?x16xf32>
  }
  // expected-error @+1 {{kernel names 'a.b' and 'a_b' give the same symbol fmk_a_b_entry}}
  %s = fmk.group "a_b" (%r) : (tensor<?x16xf32>) -> tensor<?x16xf32> {
  ^bb0(%a: tensor<?x16xf32>):
    %y = fmk.add %a, %a : tensor<?x16xf32>
    fmk.yield %y : tensor<?x16xf32>
  }
  return %s : tensor<?x16xf32>
}
