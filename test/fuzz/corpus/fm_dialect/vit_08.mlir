// A whole (tiny) encoder as an fm.model "encode" phase: patches, register, norm, window attention, residual, adapter.
fm.model @vit_tiny attributes {family = "vit", vocab_size = 1 : i64, hidden_size = 32 : i64} {
  func.func @encode(%image: tensor<3x32x32xf32>) -> tensor<4x64xf32> attributes {fm.phase = "encode"} {
    %pw = fm.param "vision.patch_embed.weight" : tensor<32x3x8x8xf32>
    %pb = fm.param "vision.patch_embed.bias" : tensor<32xf32>
    %p = fm.patch_embed %image, %pw, %pb {patch_size = 8 : i64} : tensor<3x32x32xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<16x32xf32>
    %reg = fm.param "vision.registers" : tensor<1x32xf32>
    %x = fm.register_tokens %p, %reg : tensor<16x32xf32>, tensor<1x32xf32> -> tensor<17x32xf32>
    %nw = fm.param "vision.blocks.0.norm1.weight" : tensor<32xf32>
    %nb = fm.param "vision.blocks.0.norm1.bias" : tensor<32xf32>
    %n = fm.layer_norm %x, %nw, %nb {eps = 1.0e-06 : f64} : tensor<17x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<17x32xf32>
    %qkv = fm.param "vision.blocks.0.attn.qkv.weight" : tensor<96x32xf32>
    %o = fm.param "vision.blocks.0.attn.proj.weight" : tensor<32x32xf32>
    %a = fm.vit_attention %n qkv(%qkv : tensor<96x32xf32>) o(%o : tensor<32x32xf32>) {layer = 0 : i64, num_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f64, mode = #fm<vit_attention window>, window = 2 : i64, grid = array<i64: 4, 4>, num_registers = 1 : i64} : tensor<17x32xf32> -> tensor<17x32xf32>
    %h = fm.add %x, %a : tensor<17x32xf32>
    %apw = fm.param "adapter.proj.weight" : tensor<64x32xf32>
    %apb = fm.param "adapter.proj.bias" : tensor<64xf32>
    %acw = fm.param "adapter.conv.weight" : tensor<64x64x3x3xf32>
    %acb = fm.param "adapter.conv.bias" : tensor<64xf32>
    %t = fm.vl_adapter %h proj(%apw, %apb : tensor<64x32xf32>, tensor<64xf32>) conv(%acw, %acb : tensor<64x64x3x3xf32>, tensor<64xf32>) {grid = array<i64: 4, 4>, num_registers = 1 : i64, conv_kernel = 3 : i64, num_tokens = 4 : i64} : tensor<17x32xf32> -> tensor<4x64xf32>
    return %t : tensor<4x64xf32>
  }
}
