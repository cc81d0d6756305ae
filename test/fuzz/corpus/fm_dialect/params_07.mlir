// A weight stored f16 in the artifact (fm-quantize-weights float-storage=f16).
func.func @f16_storage() {
  %e = fm.param "model.embed_tokens.weight" from "model.safetensors" {storage = f16} : tensor<16x64xbf16>
  return
}
