// Diagnostics of fm.param (key, static shape, quantizable shape, ODS result/attribute constraints) and of #fm.quant (QuantAttr::verify: bits, group, scale type; its syntax).

func.func @empty_key() {
  %w = fm.param "" : tensor<64xf32>
  return
}
