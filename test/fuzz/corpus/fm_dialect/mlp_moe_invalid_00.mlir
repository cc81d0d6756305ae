// Diagnostics of fm.mlp (activation vs gate, weight shapes) and fm.moe (expert count, top-k, per-expert weights, router, shared expert), with their ODS constraints.

func.func @mlp_dynamic_width(%x: tensor<?x?xf32>, %u: tensor<48x32xf32>, %d: tensor<32x48xf32>) -> tensor<?x?xf32> {
  %y = fm.mlp %x gate(%u : tensor<48x32xf32>) up(%u : tensor<48x32xf32>) down(%d : tensor<32x48xf32>) {layer = 0 : i64, activation = #fm<activation swiglu>} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
