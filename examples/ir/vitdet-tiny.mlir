// A tiny ViTDet-style image encoder written by hand: 8x8 patches of a 64x64
// image, one register token, window attention (4x4 windows, Register-Window)
// in layers 0 and 2 and global attention in layer 1, then the
// vision-language adapter pooling to 4 image tokens of width 64.
// CHECK-LABEL: fm.model @vitdet_tiny
// CHECK: fm.vit_attention {{.*}}mode = #fm<vit_attention window>{{.*}}num_registers = 1
// CHECK: fm.vl_adapter
fm.model @vitdet_tiny attributes {family = "vit", hidden_size = 32 : i64, vocab_size = 1 : i64} {
  func.func @encode(%image: tensor<3x64x64xf32>) -> tensor<4x64xf32> attributes {fm.phase = "encode_image"} {
    %pw = fm.param "vision.patch_embed.weight" : tensor<32x3x8x8xf32>
    %pb = fm.param "vision.patch_embed.bias" : tensor<32xf32>
    %pos = fm.param "vision.pos_embed" : tensor<64x32xf32>
    %p = fm.patch_embed %image, %pw, %pb pos(%pos : tensor<64x32xf32>) {patch_size = 8 : i64} : tensor<3x64x64xf32>, tensor<32x3x8x8xf32>, tensor<32xf32> -> tensor<64x32xf32>
    %reg = fm.param "vision.registers" : tensor<1x32xf32>
    %x0 = fm.register_tokens %p, %reg : tensor<64x32xf32>, tensor<1x32xf32> -> tensor<65x32xf32>
    %n1w0 = fm.param "vision.blocks.0.norm1.weight" : tensor<32xf32>
    %n1b0 = fm.param "vision.blocks.0.norm1.bias" : tensor<32xf32>
    %n0 = fm.layer_norm %x0, %n1w0, %n1b0 {eps = 1.000000e-06 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x32xf32>
    %qkv0 = fm.param "vision.blocks.0.attn.qkv.weight" : tensor<96x32xf32>
    %qkvb0 = fm.param "vision.blocks.0.attn.qkv.bias" : tensor<96xf32>
    %o0 = fm.param "vision.blocks.0.attn.proj.weight" : tensor<32x32xf32>
    %ob0 = fm.param "vision.blocks.0.attn.proj.bias" : tensor<32xf32>
    %a0 = fm.vit_attention %n0 qkv(%qkv0 : tensor<96x32xf32>) o(%o0 : tensor<32x32xf32>) qkv_bias(%qkvb0 : tensor<96xf32>) o_bias(%ob0 : tensor<32xf32>) {grid = array<i64: 8, 8>, head_dim = 16 : i64, layer = 0 : i64, mode = #fm<vit_attention window>, window = 4 : i64, num_heads = 2 : i64, num_registers = 1 : i64, scale = 2.500000e-01 : f64} : tensor<65x32xf32> -> tensor<65x32xf32>
    %h0 = fm.add %x0, %a0 : tensor<65x32xf32>
    %n2w0 = fm.param "vision.blocks.0.norm2.weight" : tensor<32xf32>
    %n2b0 = fm.param "vision.blocks.0.norm2.bias" : tensor<32xf32>
    %m0 = fm.layer_norm %h0, %n2w0, %n2b0 {eps = 1.000000e-06 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x32xf32>
    %fc10 = fm.param "vision.blocks.0.mlp.fc1.weight" : tensor<48x32xf32>
    %fc1b0 = fm.param "vision.blocks.0.mlp.fc1.bias" : tensor<48xf32>
    %fc20 = fm.param "vision.blocks.0.mlp.fc2.weight" : tensor<32x48xf32>
    %fc2b0 = fm.param "vision.blocks.0.mlp.fc2.bias" : tensor<32xf32>
    %f0 = fm.mlp %m0 up(%fc10 : tensor<48x32xf32>) down(%fc20 : tensor<32x48xf32>) up_bias(%fc1b0 : tensor<48xf32>) down_bias(%fc2b0 : tensor<32xf32>) {activation = #fm<activation gelu>, layer = 0 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
    %y0 = fm.add %h0, %f0 : tensor<65x32xf32>
    %n1w1 = fm.param "vision.blocks.1.norm1.weight" : tensor<32xf32>
    %n1b1 = fm.param "vision.blocks.1.norm1.bias" : tensor<32xf32>
    %n1 = fm.layer_norm %y0, %n1w1, %n1b1 {eps = 1.000000e-06 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x32xf32>
    %qkv1 = fm.param "vision.blocks.1.attn.qkv.weight" : tensor<96x32xf32>
    %qkvb1 = fm.param "vision.blocks.1.attn.qkv.bias" : tensor<96xf32>
    %o1 = fm.param "vision.blocks.1.attn.proj.weight" : tensor<32x32xf32>
    %ob1 = fm.param "vision.blocks.1.attn.proj.bias" : tensor<32xf32>
    %a1 = fm.vit_attention %n1 qkv(%qkv1 : tensor<96x32xf32>) o(%o1 : tensor<32x32xf32>) qkv_bias(%qkvb1 : tensor<96xf32>) o_bias(%ob1 : tensor<32xf32>) {grid = array<i64: 8, 8>, head_dim = 16 : i64, layer = 1 : i64, mode = #fm<vit_attention global>, num_heads = 2 : i64, num_registers = 1 : i64, scale = 2.500000e-01 : f64} : tensor<65x32xf32> -> tensor<65x32xf32>
    %h1 = fm.add %y0, %a1 : tensor<65x32xf32>
    %n2w1 = fm.param "vision.blocks.1.norm2.weight" : tensor<32xf32>
    %n2b1 = fm.param "vision.blocks.1.norm2.bias" : tensor<32xf32>
    %m1 = fm.layer_norm %h1, %n2w1, %n2b1 {eps = 1.000000e-06 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x32xf32>
    %fc11 = fm.param "vision.blocks.1.mlp.fc1.weight" : tensor<48x32xf32>
    %fc1b1 = fm.param "vision.blocks.1.mlp.fc1.bias" : tensor<48xf32>
    %fc21 = fm.param "vision.blocks.1.mlp.fc2.weight" : tensor<32x48xf32>
    %fc2b1 = fm.param "vision.blocks.1.mlp.fc2.bias" : tensor<32xf32>
    %f1 = fm.mlp %m1 up(%fc11 : tensor<48x32xf32>) down(%fc21 : tensor<32x48xf32>) up_bias(%fc1b1 : tensor<48xf32>) down_bias(%fc2b1 : tensor<32xf32>) {activation = #fm<activation gelu>, layer = 1 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
    %y1 = fm.add %h1, %f1 : tensor<65x32xf32>
    %n1w2 = fm.param "vision.blocks.2.norm1.weight" : tensor<32xf32>
    %n1b2 = fm.param "vision.blocks.2.norm1.bias" : tensor<32xf32>
    %n2 = fm.layer_norm %y1, %n1w2, %n1b2 {eps = 1.000000e-06 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x32xf32>
    %qkv2 = fm.param "vision.blocks.2.attn.qkv.weight" : tensor<96x32xf32>
    %qkvb2 = fm.param "vision.blocks.2.attn.qkv.bias" : tensor<96xf32>
    %o2 = fm.param "vision.blocks.2.attn.proj.weight" : tensor<32x32xf32>
    %ob2 = fm.param "vision.blocks.2.attn.proj.bias" : tensor<32xf32>
    %a2 = fm.vit_attention %n2 qkv(%qkv2 : tensor<96x32xf32>) o(%o2 : tensor<32x32xf32>) qkv_bias(%qkvb2 : tensor<96xf32>) o_bias(%ob2 : tensor<32xf32>) {grid = array<i64: 8, 8>, head_dim = 16 : i64, layer = 2 : i64, mode = #fm<vit_attention window>, window = 4 : i64, num_heads = 2 : i64, num_registers = 1 : i64, scale = 2.500000e-01 : f64} : tensor<65x32xf32> -> tensor<65x32xf32>
    %h2 = fm.add %y1, %a2 : tensor<65x32xf32>
    %n2w2 = fm.param "vision.blocks.2.norm2.weight" : tensor<32xf32>
    %n2b2 = fm.param "vision.blocks.2.norm2.bias" : tensor<32xf32>
    %m2 = fm.layer_norm %h2, %n2w2, %n2b2 {eps = 1.000000e-06 : f64} : tensor<65x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<65x32xf32>
    %fc12 = fm.param "vision.blocks.2.mlp.fc1.weight" : tensor<48x32xf32>
    %fc1b2 = fm.param "vision.blocks.2.mlp.fc1.bias" : tensor<48xf32>
    %fc22 = fm.param "vision.blocks.2.mlp.fc2.weight" : tensor<32x48xf32>
    %fc2b2 = fm.param "vision.blocks.2.mlp.fc2.bias" : tensor<32xf32>
    %f2 = fm.mlp %m2 up(%fc12 : tensor<48x32xf32>) down(%fc22 : tensor<32x48xf32>) up_bias(%fc1b2 : tensor<48xf32>) down_bias(%fc2b2 : tensor<32xf32>) {activation = #fm<activation gelu>, layer = 2 : i64} : tensor<65x32xf32> -> tensor<65x32xf32>
    %y2 = fm.add %h2, %f2 : tensor<65x32xf32>
    %apw = fm.param "adapter.proj.weight" : tensor<64x32xf32>
    %apb = fm.param "adapter.proj.bias" : tensor<64xf32>
    %acw = fm.param "adapter.conv.weight" : tensor<64x64x3x3xf32>
    %acb = fm.param "adapter.conv.bias" : tensor<64xf32>
    %tokens = fm.vl_adapter %y2 proj(%apw, %apb : tensor<64x32xf32>, tensor<64xf32>) conv(%acw, %acb : tensor<64x64x3x3xf32>, tensor<64xf32>) {conv_kernel = 3 : i64, grid = array<i64: 8, 8>, num_registers = 1 : i64, num_tokens = 4 : i64} : tensor<65x32xf32> -> tensor<4x64xf32>
    return %tokens : tensor<4x64xf32>
  }
}
