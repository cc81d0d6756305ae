// The push constants of the image encoders' GPU kernels (hal/vulkan/shaders:
// patch_embed, layer_norm, vit_attention, bias_act, unfold3x3, avg_pool), in
// their GLSL declaration order. API-neutral beside GpuKernelAbi.h, so that a
// Metal device binds the same kernels from one definition.
#pragma once

#include <cstdint>

namespace fm::hal::gpu {

/// shaders/bias_act.comp: y = act(y + bias) after a matmul.
struct BiasActPush {
  uint32_t yOff, yStride, width, bOff, hasBias, act; // act: 0 none, 1 gelu, 2 tanh, 3 quick
};

/// shaders/layer_norm.comp.
struct LayerNormPush {
  uint32_t xOff, xStride, yOff, yStride, width, wOff, bOff;
  float eps;
};

/// shaders/patch_embed.comp.
struct PatchEmbedPush {
  uint32_t imgOff, oOff, oStride, channels, H, W, p, dim, R, wOff, bOff, posOff, regOff,
      hasPos;
};

/// shaders/vit_attention.comp (flags: 1 rel-pos tables, 2 a pad row).
struct VitAttentionPush {
  uint32_t qOff, qStride, oOff, oStride, R, gh, gw, H, D, window, relHOff, relWOff, padOff,
      flags;
  float scale;
};
/// vit_attention.comp's limits: head_dim and the rel-pos side (window, or
/// the grid's height and width on a global layer); the patch embedding's
/// channels·patch².
constexpr int64_t kVitMaxHeadDim = 256, kVitMaxRelSide = 256, kPatchMaxTaps = 1024;

/// shaders/unfold3x3.comp.
struct Unfold3x3Push {
  uint32_t xOff, xStride, colsOff, gh, gw, cin;
};

/// shaders/avg_pool.comp.
struct AvgPoolPush {
  uint32_t xOff, xStride, yOff, yStride, width, g, gOut, s, k;
};

} // namespace fm::hal::gpu
