// fm-quantize-weights: projections get the requested grouped low-bit format,
// the embedding (and with it a tied LM head) gets embed-bits, norms, KV
// scales and routers stay f32, a weight whose input dimension is not a
// multiple of the group stays f32 with a warning, and kv-bits=8 turns a
// cache written with per-layer scales into int8.
// RUN: fm-opt %S/Inputs/two_layers.mlir '--fm-quantize-weights=bits=2 group=32 embed-bits=4 kv-bits=8' 2>&1 | FileCheck %s
// RUN: rm -rf %t && %python %examples/gen_checkpoint.py --family afm7 --preset small --out %t > /dev/null
// RUN: fmc import %t | fm-opt '--fm-quantize-weights=kv-bits=8' | FileCheck %s --check-prefix=AFM7
// RUN: fm-opt %S/Inputs/two_layers.mlir '--fm-quantize-weights=bits=4 group=64 grid=affine' 2>&1 | FileCheck %s --check-prefix=W4
// RUN: fm-opt %examples/ir/pt-moe-tiny.mlir '--fm-quantize-weights=bits=8 group=32 kv-bits=8' 2>&1 | FileCheck %s --check-prefix=MOE
// RUN: not fm-opt %S/Inputs/two_layers.mlir '--fm-quantize-weights=bits=3' 2>&1 | FileCheck %s --check-prefix=BITS
// RUN: fm-opt %S/Inputs/two_layers.mlir '--fm-quantize-weights=bits=0 float-storage=f16' | FileCheck %s --check-prefix=F16
// RUN: fm-opt %S/Inputs/two_layers.mlir '--fm-quantize-weights=bits=2 group=32 float-storage=f16' 2>&1 | FileCheck %s --check-prefix=F16W2
// RUN: fm-opt %examples/ir/pt-moe-tiny.mlir '--fm-quantize-weights=bits=0 float-storage=f16' | FileCheck %s --check-prefix=F16MOE
// RUN: not fm-opt %S/Inputs/two_layers.mlir '--fm-quantize-weights=float-storage=bf16' 2>&1 | FileCheck %s --check-prefix=STORAGE

// CHECK: warning: parameter 'down' stays unquantized: its input dimension 40 is not a multiple of the group 32
// Layer 0 writes the cache without K/V scales: it stays f32.
// CHECK: warning: KV cache @kv stays f32: kv-bits=8 needs per-layer K/V scales (k_scale/v_scale) on every layer that writes it
// CHECK: fm.kv_cache @kv layers(2) kv_heads(1) head_dim(16) capacity(64) : f32
// CHECK-DAG: fm.param "emb" {quant = #fm.quant<bits = 4, group = 32, grid = balanced, scale = f16>} : tensor<48x32xf32>
// CHECK-DAG: fm.param "norm" : tensor<32xf32>
// CHECK-DAG: fm.param "q" {quant = #fm.quant<bits = 2, group = 32, grid = balanced, scale = f16>} : tensor<32x32xf32>
// CHECK-DAG: fm.param "qkv" {quant = #fm.quant<bits = 2, group = 32, grid = balanced, scale = f16>} : tensor<64x32xf32>
// CHECK-DAG: fm.param "head_norm" : tensor<16xf32>
// CHECK-DAG: fm.param "scale" : tensor<f32>
// CHECK-DAG: fm.param "down" : tensor<32x40xf32>
// CHECK-DAG: fm.param "gate" {quant = #fm.quant<bits = 2, group = 32, grid = balanced, scale = f16>} : tensor<40x32xf32>

// afm7 writes its cache with per-layer scales: an int8 cache.
// AFM7: fm.kv_cache @kv layers(2) kv_heads(2) head_dim(32) capacity(2048) : i8

// Group 64 does not divide 32 or 40 inputs: those weights stay f32.
// W4: warning: parameter 'q' stays unquantized: its input dimension 32 is not a multiple of the group 64
// W4: fm.kv_cache @kv {{.*}} : f32
// W4-NOT: quant

// Experts are quantized, the router is not; no cache has scales: f32 stays.
// MOE: warning: KV cache @kv_t0 stays f32: kv-bits=8 needs per-layer K/V scales
// MOE: fm.param "model.blocks.0.tracks.0.layers.1.mlp.router.weight" : tensor<4x32xf32>
// MOE: fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.0.gate_proj.weight" {quant = #fm.quant<bits = 8, group = 32, grid = balanced, scale = f16>}

// BITS: error: quantization to 3 bits is not supported (2, 4 or 8)

// float-storage=f16: every weight a micro-kernel reads (projections, the
// embedding = the tied head) is stored f16; what generated kernels read
// (norms, q/k norms, KV scales) stays f32.
// F16-DAG: fm.param "emb" {storage = f16} : tensor<48x32xf32>
// F16-DAG: fm.param "q" {storage = f16} : tensor<32x32xf32>
// F16-DAG: fm.param "qkv" {storage = f16} : tensor<64x32xf32>
// F16-DAG: fm.param "down" {storage = f16} : tensor<32x40xf32>
// F16-DAG: fm.param "norm" : tensor<32xf32>
// F16-DAG: fm.param "head_norm" : tensor<16xf32>
// F16-DAG: fm.param "scale" : tensor<f32>

// With w2: the packed weights keep their format; one that stays unpacked
// (down: 40 inputs, group 32) is f16.
// F16W2-DAG: fm.param "q" {quant = #fm.quant<bits = 2, group = 32, grid = balanced, scale = f16>} : tensor<32x32xf32>
// F16W2-DAG: fm.param "down" {storage = f16} : tensor<32x40xf32>
// F16W2-DAG: fm.param "emb" {storage = f16} : tensor<48x32xf32>

// The float Moe kernel reads its router and experts in one dtype: all f16.
// F16MOE-DAG: fm.param "model.blocks.0.tracks.0.layers.1.mlp.router.weight" {storage = f16}
// F16MOE-DAG: fm.param "model.blocks.0.tracks.0.layers.1.mlp.experts.0.gate_proj.weight" {storage = f16}
// F16MOE-DAG: fm.param "model.blocks.0.tracks.0.layers.1.input_layernorm.weight" : tensor<32xf32>

// STORAGE: error: fm-quantize-weights: float-storage must be f32 or f16, got 'bf16'
