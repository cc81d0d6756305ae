// Parameters inside an fm.model feed the ops; a quantized weight feeds an MLP like any other.
fm.model @quantized attributes {family = "llama", vocab_size = 16 : i64, hidden_size = 64 : i64} {
  func.func @prefill(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {fm.phase = "prefill"} {
    %g = fm.param "model.layers.0.mlp.gate_proj.weight" from "model.safetensors" {quant = #fm.quant<bits = 2, group = 64, grid = balanced, scale = f16>} : tensor<128x64xf32>
    %u = fm.param "model.layers.0.mlp.up_proj.weight" from "model.safetensors" {quant = #fm.quant<bits = 2, group = 64, grid = balanced, scale = f16>} : tensor<128x64xf32>
    %d = fm.param "model.layers.0.mlp.down_proj.weight" from "model.safetensors" {quant = #fm.quant<bits = 2, group = 128, grid = balanced, scale = f16>} : tensor<64x128xf32>
    %y = fm.mlp %x gate(%g : tensor<128x64xf32>) up(%u : tensor<128x64xf32>) down(%d : tensor<64x128xf32>) {layer = 0 : i64, activation = #fm<activation swiglu>} : tensor<?x64xf32> -> tensor<?x64xf32>
    return %y : tensor<?x64xf32>
  }
}
