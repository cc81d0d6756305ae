// The image encoders' kernel cases that the GPU devices' tests share
// (test/unit/vulkan, test/unit/cuda): each applies one description to the
// GPU device and to the CPU device and compares the outputs. `T` is the
// test's fixture: its `gpu` and `cpu` Sides (DeviceSides.h), runBoth(prepare,
// launch), importWeights(blob) and clearBuffers(); it befriends VisionCases.
#pragma once

#include "DeviceSides.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace fm::hal::gputest {

struct VisionCases {
  /// y = act(x·Wᵀ + b), or y += x·Wᵀ + b, in f32, f16 and a packed format,
  /// for 1, 13 and `gemmRows` rows: those of the packed weight run on the
  /// device's tensor cores, within `gemmTol` (f16 operands).
  template <class T> static void matmulEpilogue(T &t, int64_t gemmRows, double gemmTol) {
    struct Case {
      WeightKind kind;
      QuantFormat format;
      const char *name;
    };
    const Case cases[] = {{WeightKind::F32, {8, 32, QuantGrid::Balanced}, "f32"},
                          {WeightKind::F16, {8, 32, QuantGrid::Balanced}, "f16"},
                          {WeightKind::Quant, {4, 32, QuantGrid::Affine}, "q4g32a"}};
    const Activation acts[] = {Activation::None, Activation::Gelu, Activation::GeluTanh,
                               Activation::QuickGelu};
    for (const Case &c : cases)
      for (int64_t M : {int64_t(1), int64_t(13), gemmRows})
        for (Activation act : acts) {
          t.clearBuffers();
          const int64_t K = 96, n = 45, xStride = K + 3, yStride = n + 7;
          Blob blob;
          const size_t w = blob.add(randomFloats(n * K, 11, 0.3f), {n, K}, c.kind, c.format);
          const size_t b = blob.add(randomFloats(n, 12), {n}, WeightKind::F32);
          t.importWeights(blob);
          const std::vector<float> x = randomFloats(M * xStride, 13);
          const std::vector<float> y0 = randomFloats(M * yStride, 14);
          const bool accumulate = act == Activation::None;
          Buffer *ys[2];
          int side = 0;
          t.runBoth(
              [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
                MatmulDesc d;
                d.x = rowsOf(s.buffer(x), xStride, K);
                ys[side] = s.buffer(y0);
                d.y = rowsOf(ys[side++], yStride, n, 2);
                d.k = K;
                d.n = n;
                d.accumulate = accumulate;
                d.weights = {blob.desc(s, w)};
                d.bias = blob.desc(s, b);
                d.activation = act;
                d.maxRows = M;
                d.activations = kernels::QActivations::F32;
                return s.device->prepareMatmul(d);
              },
              Launch{M, 0, nullptr});
          if (::testing::Test::HasFatalFailure())
            return;
          const bool tensorCores = c.kind == WeightKind::Quant && M == gemmRows;
          expectClose(t.gpu.read(ys[0]), t.cpu.read(ys[1]), tensorCores ? gemmTol : 2e-5,
                      std::string(c.name) + " M=" + std::to_string(M) + " act " +
                          std::to_string(int(act)));
        }
  }

  /// LayerNorm: widths under and over a workgroup, a mean far from 0, in
  /// place and into another buffer.
  template <class T> static void layerNorm(T &t) {
    for (int64_t C : {45, 200})
      for (bool inPlace : {false, true}) {
        t.clearBuffers();
        const int64_t rows = 5;
        Blob blob;
        const size_t w = blob.add(randomFloats(C, 21), {C}, WeightKind::F32);
        const size_t b = blob.add(randomFloats(C, 22), {C}, WeightKind::F32);
        t.importWeights(blob);
        std::vector<float> x = randomFloats(rows * C, 23);
        for (float &v : x)
          v += 3.0f;
        Buffer *ys[2];
        int side = 0;
        t.runBoth(
            [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
              LayerNormDesc d;
              Buffer *xb = s.buffer(x);
              ys[side] = inPlace ? xb : s.buffer(std::vector<float>(rows * C, -1.0f));
              d.x = rowsOf(xb, C, C);
              d.y = rowsOf(ys[side++], C, C);
              d.weight = blob.desc(s, w);
              d.bias = blob.desc(s, b);
              d.eps = 1e-5f;
              return s.device->prepareLayerNorm(d);
            },
            Launch{rows, 0, nullptr});
        if (::testing::Test::HasFatalFailure())
          return;
        expectClose(t.gpu.read(ys[0]), t.cpu.read(ys[1]), 1e-5,
                    "C=" + std::to_string(C) + (inPlace ? " in place" : ""));
      }
  }

  /// The patch embedding, with registers and positions and without.
  template <class T> static void patchEmbed(T &t) {
    for (bool extras : {true, false}) {
      t.clearBuffers();
      const int64_t ch = 3, H = 20, W = 28, p = 4, dim = 37, R = extras ? 2 : 0;
      const int64_t patches = (H / p) * (W / p), K = ch * p * p;
      Blob blob;
      const size_t w = blob.add(randomFloats(dim * K, 31), {dim, K}, WeightKind::F32);
      const size_t b = blob.add(randomFloats(dim, 32), {dim}, WeightKind::F32);
      const size_t pos = blob.add(randomFloats(patches * dim, 33), {patches, dim}, WeightKind::F32);
      const size_t reg = blob.add(randomFloats(2 * dim, 34), {2, dim}, WeightKind::F32);
      t.importWeights(blob);
      const std::vector<float> image = randomFloats(ch * H * W, 35);
      Buffer *outs[2];
      int side = 0;
      t.runBoth(
          [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
            PatchEmbedDesc d;
            d.image = rowsOf(s.buffer(image), ch * H * W, ch * H * W);
            outs[side] = s.buffer(std::vector<float>((R + patches) * dim, -3.0f));
            d.out = rowsOf(outs[side++], dim, dim);
            d.channels = ch;
            d.height = H;
            d.width = W;
            d.patch = p;
            d.weight = blob.desc(s, w);
            d.bias = blob.desc(s, b);
            if (extras) {
              d.pos = blob.desc(s, pos);
              d.registers = blob.desc(s, reg);
            }
            return s.device->preparePatchEmbed(d);
          },
          Launch{R + patches, 0, nullptr});
      if (::testing::Test::HasFatalFailure())
        return;
      expectClose(t.gpu.read(outs[0]), t.cpu.read(outs[1]), 1e-5,
                  extras ? "registers and positions" : "patches alone");
    }
  }

  /// ViT attention: windows (padded with the pad row or zeros), global
  /// layers, relative positions, registers, more keys than a workgroup.
  template <class T> static void vitAttention(T &t) {
    struct Case {
      int64_t R, gh, gw, H, D, window;
      bool rel, pad;
      const char *name;
    };
    const Case cases[] = {
        {2, 7, 5, 2, 16, 3, true, true, "window 3 over 7x5 (padded), 2 registers, rel-pos, pad row"},
        {1, 5, 5, 3, 8, 2, true, false, "window 2 over 5x5, padded with zeros"},
        {1, 4, 6, 2, 12, 0, true, false, "global 4x6, rel-pos, a register"},
        {0, 9, 9, 3, 72, 0, false, false, "global 9x9 (81 keys: two blocks of 64), head_dim 72"},
        {3, 8, 8, 1, 16, 4, false, true, "window 4 over 8x8 (no padding), 3 registers"}};
    for (const Case &c : cases) {
      t.clearBuffers();
      const int64_t tokens = c.R + c.gh * c.gw, C = c.H * c.D, ld = 3 * C + 5;
      const int64_t Sh = c.window ? c.window : c.gh, Sw = c.window ? c.window : c.gw;
      Blob blob;
      const size_t rh = blob.add(randomFloats((2 * Sh - 1) * c.D, 41, 0.5f), {2 * Sh - 1, c.D},
                                 WeightKind::F32);
      const size_t rw = blob.add(randomFloats((2 * Sw - 1) * c.D, 42, 0.5f), {2 * Sw - 1, c.D},
                                 WeightKind::F32);
      const size_t pad = blob.add(randomFloats(3 * C, 43), {3 * C}, WeightKind::F32);
      t.importWeights(blob);
      const std::vector<float> qkv = randomFloats(tokens * ld, 44);
      Buffer *outs[2];
      int side = 0;
      t.runBoth(
          [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
            VitAttentionDesc d;
            d.qkv = rowsOf(s.buffer(qkv), ld, 3 * C);
            outs[side] = s.buffer(std::vector<float>(tokens * (C + 2), -5.0f));
            d.out = rowsOf(outs[side++], C + 2, C);
            d.registers = c.R;
            d.gridH = c.gh;
            d.gridW = c.gw;
            d.heads = c.H;
            d.headDim = c.D;
            d.window = c.window;
            d.scale = 1.0f / std::sqrt(float(c.D));
            if (c.rel) {
              d.relPosH = blob.desc(s, rh);
              d.relPosW = blob.desc(s, rw);
            }
            if (c.pad)
              d.padQkv = blob.desc(s, pad);
            return s.device->prepareVitAttention(d);
          },
          Launch{tokens, 0, nullptr});
      if (::testing::Test::HasFatalFailure())
        return;
      expectClose(t.gpu.read(outs[0]), t.cpu.read(outs[1]), 1e-5, c.name);
    }
  }

  /// The 3x3 convolution (f32, and q8 within `packedTol`), then average
  /// pooling 7x7 to 3x3 and to 1x1.
  template <class T> static void conv3x3AndPool(T &t, double packedTol) {
    for (WeightKind kind : {WeightKind::F32, WeightKind::Quant}) {
      t.clearBuffers();
      const int64_t gh = 5, gw = 7, cin = kind == WeightKind::Quant ? 32 : 13, cout = 11;
      const int64_t tokens = gh * gw, K = 9 * cin;
      const QuantFormat f{8, 32, QuantGrid::Balanced};
      Blob blob;
      const size_t w = blob.add(randomFloats(cout * K, 51, 0.3f), {cout, K}, kind, f);
      const size_t b = blob.add(randomFloats(cout, 52), {cout}, WeightKind::F32);
      t.importWeights(blob);
      const std::vector<float> x = randomFloats(tokens * cin, 53);
      Buffer *ys[2];
      int side = 0;
      t.runBoth(
          [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
            Conv3x3Desc d;
            d.x = rowsOf(s.buffer(x), cin, cin);
            ys[side] = s.buffer(std::vector<float>(tokens * cout, -2.0f));
            d.y = rowsOf(ys[side++], cout, cout);
            d.gridH = gh;
            d.gridW = gw;
            d.weight = blob.desc(s, w);
            d.weight.shape = {cout, cin, 3, 3};
            d.bias = blob.desc(s, b);
            d.activations = kernels::QActivations::F32;
            return s.device->prepareConv3x3(d);
          },
          Launch{tokens, 0, nullptr});
      if (::testing::Test::HasFatalFailure())
        return;
      expectClose(t.gpu.read(ys[0]), t.cpu.read(ys[1]), kind == WeightKind::F32 ? 2e-5 : packedTol,
                  kind == WeightKind::F32 ? "conv3x3 f32" : "conv3x3 q8");
    }
    // Pooling 7x7 to 3x3 (stride 2, kernel 3) and to 1x1 (the whole grid).
    for (int64_t outGrid : {3, 1}) {
      t.clearBuffers();
      const int64_t g = 7, D = 45;
      const std::vector<float> x = randomFloats(g * g * D, 54);
      Buffer *ys[2];
      int side = 0;
      t.runBoth(
          [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
            AvgPoolDesc d;
            d.x = rowsOf(s.buffer(x), D, D);
            ys[side] = s.buffer(std::vector<float>(outGrid * outGrid * D, -2.0f));
            d.y = rowsOf(ys[side++], D, D);
            d.grid = g;
            d.outGrid = outGrid;
            return s.device->prepareAvgPool(d);
          },
          Launch{g * g, 0, nullptr});
      if (::testing::Test::HasFatalFailure())
        return;
      expectClose(t.gpu.read(ys[0]), t.cpu.read(ys[1]), 1e-6,
                  "avg pool to " + std::to_string(outGrid));
    }
  }

  /// A VLM's prompt: rows 1 and 4 of the embedding take the host's image
  /// rows, the others their tokens' rows.
  template <class T> static void embedSplicesImageRows(T &t) {
    const int64_t vocab = 61, width = 45, stride = width + 3;
    Blob blob;
    const size_t table = blob.add(randomFloats(vocab * width, 61), {vocab, width}, WeightKind::F16);
    t.importWeights(blob);
    const std::vector<int32_t> tokens = {5, 60, 17, 3, 60, 31};
    const std::vector<float> image = randomFloats(2 * width, 62);
    const float *rows[6] = {nullptr, image.data(), nullptr, nullptr, image.data() + width, nullptr};
    Buffer *outs[2];
    int side = 0;
    t.runBoth(
        [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
          EmbedDesc d;
          d.table = blob.desc(s, table);
          outs[side] = s.buffer(std::vector<float>(6 * stride, -7.0f));
          d.out = rowsOf(outs[side++], stride, width);
          return s.device->prepareEmbed(d);
        },
        Launch{6, 0, tokens.data(), rows});
    if (::testing::Test::HasFatalFailure())
      return;
    const std::vector<float> got = t.gpu.read(outs[0]);
    expectClose(got, t.cpu.read(outs[1]), 1e-7, "image rows spliced");
    EXPECT_EQ(got[4 * stride + 7], image[width + 7]);
  }
};

} // namespace fm::hal::gputest
