// Round trip of fm.param: with and without `from`, every dtype, and #fm.quant over bits 2/4/8, groups 32/64/128, both grids and scale types.

// The key alone, and the key with the checkpoint file it lives in.
func.func @key_and_file() -> (tensor<172x64xf32>, tensor<172x64xbf16>) {
  %a = fm.param "model.layers.0.mlp.up_proj.weight" : tensor<172x64xf32>
  %b = fm.param "model.layers.0.mlp.up_proj.weight" from "model-00001-of-00002.safetensors" : tensor<172x64xbf16>
  return %a, %b : tensor<172x64xf32>, tensor<172x64xbf16>
}
