// fm-quantize-weights on a VLM (fm_vlm: afm7 + rw-vitdet-tiny, its
// encode_image function beside the decoder's): vision-bits and
// vision-float-storage format the encoder's and adapter's linear weights
// (attn.qkv, attn.proj, mlp.fc1, mlp.fc2, adapter.linear: 17 here) and
// nothing else; bits, embed-bits and float-storage format the language model
// and never a vision weight; the patch embedding, the 3x3 convolution,
// LayerNorms, biases, positions, registers and rel-pos tables stay f32 under
// every option.
// RUN: rm -rf %t && %python %examples/gen_checkpoint.py --family fm_vlm --preset afm7-rw-tiny --out %t > /dev/null
// RUN: fmc import %t > %t.mlir
// RUN: fm-opt %t.mlir '--fm-quantize-weights=bits=4 group=32 vision-bits=8' > %t.both.mlir
// RUN: FileCheck %s --check-prefix=BOTH < %t.both.mlir
// RUN: FileCheck %s --check-prefix=BOTHCOUNT < %t.both.mlir
// RUN: FileCheck %s --check-prefix=FIXED < %t.both.mlir
// RUN: FileCheck %s --check-prefix=FIXEDNONE < %t.both.mlir
// RUN: fm-opt %t.mlir '--fm-quantize-weights=bits=0 group=32 vision-bits=4' > %t.vision.mlir
// RUN: FileCheck %s --check-prefix=VISION < %t.vision.mlir
// RUN: FileCheck %s --check-prefix=LMPLAIN < %t.vision.mlir
// RUN: FileCheck %s --check-prefix=FIXEDNONE < %t.vision.mlir
// RUN: fm-opt %t.mlir '--fm-quantize-weights=bits=4 group=32 embed-bits=8 float-storage=f16' > %t.lm.mlir
// RUN: FileCheck %s --check-prefix=LM < %t.lm.mlir
// RUN: FileCheck %s --check-prefix=VPLAIN < %t.lm.mlir
// RUN: fm-opt %t.mlir '--fm-quantize-weights=bits=0 vision-float-storage=f16' > %t.vf16.mlir
// RUN: FileCheck %s --check-prefix=VF16 < %t.vf16.mlir
// RUN: FileCheck %s --check-prefix=LMPLAIN < %t.vf16.mlir
// RUN: FileCheck %s --check-prefix=FIXEDNONE < %t.vf16.mlir
// RUN: fm-opt %t.mlir '--fm-quantize-weights=bits=4 group=32 vision-bits=4 vision-float-storage=f16' > %t.w4f16.mlir
// RUN: FileCheck %s --check-prefix=W4F16 < %t.w4f16.mlir
// RUN: FileCheck %s --check-prefix=W4F16NONE < %t.w4f16.mlir
// RUN: not fm-opt %t.mlir '--fm-quantize-weights=vision-bits=2' 2>&1 | FileCheck %s --check-prefix=BADBITS
// RUN: not fm-opt %t.mlir '--fm-quantize-weights=vision-float-storage=bf16' 2>&1 | FileCheck %s --check-prefix=BADSTORAGE

// The encode_image function comes first, then the decoder's functions.

// LM 4-bit, vision 8-bit: exactly the 17 vision linear weights are q8, the
// LM's projections q4, the embedding (embed-bits none) f32.
// BOTHCOUNT-COUNT-17: fm.param "{{(vision|adapter)[^"]*}}" from "model.safetensors" {quant = #fm.quant<bits = 8, group = 32, grid = balanced, scale = f16>}
// BOTHCOUNT-NOT: fm.param "{{(vision|adapter)[^"]*}}" from "model.safetensors" {
// BOTH: fm.param "vision.blocks.0.attn.qkv.weight" from "model.safetensors" {quant = #fm.quant<bits = 8, group = 32, grid = balanced, scale = f16>} : tensor<192x64xf32>
// BOTH: fm.param "vision.blocks.3.mlp.fc2.weight" from "model.safetensors" {quant = #fm.quant<bits = 8, group = 32, grid = balanced, scale = f16>} : tensor<64x160xf32>
// BOTH: fm.param "adapter.linear.weight" from "model.safetensors" {quant = #fm.quant<bits = 8, group = 32, grid = balanced, scale = f16>} : tensor<128x64xf32>
// BOTH: fm.param "model.embedding.weight" from "model.safetensors" : tensor<509x128xf32>
// BOTH: fm.param "model.layers.0.self_attn.qkv_proj.weight" from "model.safetensors" {quant = #fm.quant<bits = 4, group = 32, grid = balanced, scale = f16>} : tensor<256x128xf32>
// BOTH: fm.param "model.kv_reuse_layers.1.mlp.down_proj.weight" from "model.safetensors" {quant = #fm.quant<bits = 4, group = 32, grid = balanced, scale = f16>} : tensor<128x416xf32>

// What no option formats, in the encoder and adapter.
// FIXEDNONE-NOT: fm.param "{{(vision|adapter)[^"]*(norm[12]?\.weight|bias|pos_embed|registers|rel_pos_[hw]|patch_embed\.weight|conv\.weight)}}" from "model.safetensors" {
// FIXED: fm.param "vision.patch_embed.weight" from "model.safetensors" : tensor<64x3x8x8xf32>
// FIXED: fm.param "vision.pos_embed" from "model.safetensors" : tensor<1x10x10x64xf32>
// FIXED: fm.param "vision.registers" from "model.safetensors" : tensor<2x64xf32>
// FIXED: fm.param "vision.blocks.0.norm1.weight" from "model.safetensors" : tensor<64xf32>
// FIXED: fm.param "vision.blocks.0.attn.rel_pos_h" from "model.safetensors" : tensor<7x16xf32>
// FIXED: fm.param "adapter.conv.weight" from "model.safetensors" : tensor<128x128x3x3xf32>

// Vision 4-bit alone: the LM's weights keep no format at all.
// VISION-COUNT-17: fm.param "{{(vision|adapter)[^"]*}}" from "model.safetensors" {quant = #fm.quant<bits = 4, group = 32, grid = balanced, scale = f16>}
// VISION: fm.param "model.layers.0.self_attn.qkv_proj.weight" from "model.safetensors" : tensor<256x128xf32>
// LMPLAIN-NOT: fm.param "model.{{[^"]*}}" from "model.safetensors" {

// The LM's options (4-bit, 8-bit embedding, f16 storage) reach no vision
// weight: the encode_image function's params keep no format.
// LM: fm.param "vision.blocks.0.attn.qkv.weight" from "model.safetensors" : tensor<192x64xf32>
// LM: fm.param "adapter.linear.weight" from "model.safetensors" : tensor<128x64xf32>
// LM: fm.param "model.embedding.weight" from "model.safetensors" {quant = #fm.quant<bits = 8, group = 32, grid = balanced, scale = f16>} : tensor<509x128xf32>
// LM: fm.param "model.layers.0.mlp.gate_proj.weight" from "model.safetensors" {quant = #fm.quant<bits = 4, group = 32, grid = balanced, scale = f16>} : tensor<416x128xf32>
// VPLAIN-NOT: fm.param "{{(vision|adapter)[^"]*}}" from "model.safetensors" {

// vision-float-storage=f16 alone: the 17 linear weights are stored f16.
// VF16-COUNT-17: fm.param "{{(vision|adapter)[^"]*}}" from "model.safetensors" {storage = f16}
// VF16-NOT: fm.param "{{(vision|adapter)[^"]*}}" from "model.safetensors" {

// Packed weights keep their packing under f16 storage (storage is for
// weights that stay unpacked); the LM's float-storage stays f32.
// W4F16: fm.param "vision.blocks.0.attn.qkv.weight" from "model.safetensors" {quant = #fm.quant<bits = 4, group = 32, grid = balanced, scale = f16>} : tensor<192x64xf32>
// W4F16NONE-NOT: storage = f16

// BADBITS: fm-quantize-weights: vision-bits must be 0, 4 or 8, got 2
// BADSTORAGE: fm-quantize-weights: vision-float-storage must be f32 or f16, got 'bf16'
