// A one-layer transformer-shaped model for the executor tests, built as an
// artifact (Embed → QKV MatMul → Dispatch KV write → Attention → MatMul
// accumulate → [CopyLastRow] → MatMul to logits) and as a plain C++
// reference that computes the same logits.
#pragma once

#include "ArtifactBuilder.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace fm::test {

struct TinyModel {
  static constexpr uint32_t kVocab = 40;
  static constexpr uint32_t kHidden = 16;
  static constexpr uint32_t kHeads = 4;
  static constexpr uint32_t kKvHeads = 2;
  static constexpr uint32_t kHeadDim = 4;
  static constexpr uint32_t kKv = kKvHeads * kHeadDim; // 8
  // test_kernels.cpp's fmt_write_kv bakes in K/V rows of 8 floats inside a
  // 32-float QKV row.
  static constexpr uint32_t kQkvStride = 32;

  struct Options {
    /// One MatMul into a fused QKV buffer (else q into its own dense buffer
    /// and k, v into the QKV buffer's columns 16..31).
    bool fusedQkv = true;
    /// Data between wq and wk, so that the QKV weights are not contiguous.
    bool gapAfterWq = false;
    /// Row stride of the attention output (16: dense).
    uint32_t attnStride = 16;
    uint32_t window = 0;
    uint32_t maxRows = 8;
    uint32_t capacity = 32;
    bool withPrefill = true;
    bool withPrefillLast = true;
    bool withDecode = true;
    /// An embedded tokenizer (ArtifactBuilder::tokenizerJson), when set.
    std::string tokenizerJson, tokenizerConfig;
    std::vector<int32_t> stopIds;
  };

  std::vector<float> embed, wq, wk, wv, wo, lm;

  explicit TinyModel(uint32_t seed = 7) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    auto fill = [&](std::vector<float> &w, size_t n, float scale) {
      w.resize(n);
      for (float &x : w)
        x = u(rng) * scale;
    };
    fill(embed, kVocab * kHidden, 1.0f);
    fill(wq, kHidden * kHidden, 0.5f);
    fill(wk, kKv * kHidden, 0.5f);
    fill(wv, kKv * kHidden, 0.5f);
    fill(wo, kHidden * kHidden, 0.3f);
    fill(lm, kVocab * kHidden, 0.3f);
  }

  float scale() const { return 1.0f / std::sqrt(float(kHeadDim)); }

  std::vector<uint8_t> build(const Options &o,
                             const std::vector<uint8_t> &kernelsSo) const {
    ArtifactBuilder b;
    b.vocab = kVocab;
    b.hidden = kHidden;
    b.tokenizerJson = o.tokenizerJson;
    b.tokenizerConfig = o.tokenizerConfig;
    b.stopIds = o.stopIds;
    const uint32_t E = b.addWeight("model.embed_tokens.weight",
                                   {kVocab, kHidden}, embed);
    const uint32_t Q = b.addWeight("model.layers.0.self_attn.q_proj.weight",
                                   {kHidden, kHidden}, wq);
    if (o.gapAfterWq)
      b.addGap(64);
    const uint32_t K = b.addWeight("model.layers.0.self_attn.k_proj.weight",
                                   {kKv, kHidden}, wk);
    const uint32_t V = b.addWeight("model.layers.0.self_attn.v_proj.weight",
                                   {kKv, kHidden}, wv);
    const uint32_t O = b.addWeight("model.layers.0.self_attn.o_proj.weight",
                                   {kHidden, kHidden}, wo);
    const uint32_t L = b.addWeight("lm_head.weight", {kVocab, kHidden}, lm);
    const uint32_t cache = b.addCache("kv", 1, kKvHeads, kHeadDim, o.capacity);
    b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"fmt_write_kv"},
                    kernelsSo);

    const uint64_t R = o.maxRows;
    const uint64_t h = 0, qkv = 16 * R, qDense = 48 * R, attn = 64 * R,
                   hl = 88 * R, logits = 88 * R + 16;
    const uint64_t arena = logits + uint64_t(kVocab) * R;

    auto layer = [&](bool lastOnly) {
      std::vector<ArtifactBuilder::Cmd> cmds;
      const std::string sa = "model.layers.0.self_attn";
      cmds.push_back(b.embed(E, buf(h, kHidden, kHidden), "model.embed_tokens"));
      fa::BufferRef qRef = buf(qkv, kQkvStride, kHidden * 1);
      if (o.fusedQkv) {
        cmds.push_back(b.matmul(buf(h, kHidden, kHidden), {Q, K, V},
                                buf(qkv, kQkvStride, kQkvStride), kHidden,
                                kQkvStride, false, sa));
      } else {
        qRef = buf(qDense, kHidden, kHidden);
        cmds.push_back(b.matmul(buf(h, kHidden, kHidden), {Q}, qRef, kHidden,
                                kHidden, false, sa));
        cmds.push_back(b.matmul(buf(h, kHidden, kHidden), {K, V},
                                buf(qkv + 16, kQkvStride, 2 * kKv), kHidden,
                                2 * kKv, false, sa));
      }
      cmds.push_back(b.dispatch(
          0,
          {b.bufferArg(buf(qkv + 16, kQkvStride, kKv)),
           b.bufferArg(buf(qkv + 24, kQkvStride, kKv)),
           b.cacheArg(fa::ArgKind::CacheK, cache, 0),
           b.cacheArg(fa::ArgKind::CacheV, cache, 0)},
          sa));
      cmds.push_back(b.attention(qRef, buf(attn, o.attnStride, kHidden), cache,
                                 0, kHeads, kKvHeads, kHeadDim, scale(),
                                 o.window, sa));
      cmds.push_back(b.matmul(buf(attn, o.attnStride, kHidden), {O},
                              buf(h, kHidden, kHidden), kHidden, kHidden,
                              /*accumulate=*/true, sa + ".o_proj"));
      if (lastOnly) {
        cmds.push_back(b.copyLastRow(buf(h, kHidden, kHidden),
                                     buf(hl, kHidden, kHidden), "model.norm"));
        cmds.push_back(b.matmul(buf(hl, kHidden, kHidden), {L},
                                buf(logits, kVocab, kVocab), kHidden, kVocab,
                                false, "lm_head", /*lastRowOnly=*/true));
      } else {
        cmds.push_back(b.matmul(buf(h, kHidden, kHidden), {L},
                                buf(logits, kVocab, kVocab), kHidden, kVocab,
                                false, "lm_head"));
      }
      return cmds;
    };
    if (o.withPrefill)
      b.addProgram("prefill", o.maxRows, arena, buf(logits, kVocab, kVocab),
                   false, layer(false));
    if (o.withPrefillLast)
      b.addProgram("prefill_last", o.maxRows, arena,
                   buf(logits, kVocab, kVocab), true, layer(true));
    if (o.withDecode)
      b.addProgram("decode", 1, arena, buf(logits, kVocab, kVocab), false,
                   layer(false));
    return b.finish();
  }

  /// Causal teacher-forced logits of every position: [n][vocab].
  std::vector<float> reference(const std::vector<int32_t> &tokens,
                               uint32_t window = 0) const {
    const size_t n = tokens.size();
    auto linear = [](const float *w, const float *x, size_t rows, size_t k,
                     float *y) {
      for (size_t r = 0; r < rows; ++r) {
        double acc = 0;
        for (size_t c = 0; c < k; ++c)
          acc += double(w[r * k + c]) * x[c];
        y[r] = float(acc);
      }
    };
    std::vector<float> h(n * kHidden), q(n * kHidden), k(n * kKv), v(n * kKv);
    for (size_t t = 0; t < n; ++t) {
      for (size_t c = 0; c < kHidden; ++c)
        h[t * kHidden + c] = embed[size_t(tokens[t]) * kHidden + c];
      linear(wq.data(), &h[t * kHidden], kHidden, kHidden, &q[t * kHidden]);
      linear(wk.data(), &h[t * kHidden], kKv, kHidden, &k[t * kKv]);
      linear(wv.data(), &h[t * kHidden], kKv, kHidden, &v[t * kKv]);
    }
    std::vector<float> out(n * kVocab);
    for (size_t t = 0; t < n; ++t) {
      std::vector<float> attn(kHidden, 0.0f);
      size_t j0 = window > 0 && t + 1 > window ? t + 1 - window : 0;
      for (size_t hd = 0; hd < kHeads; ++hd) {
        size_t g = hd / (kHeads / kKvHeads);
        std::vector<double> s(t + 1, 0.0);
        double mx = -1e30;
        for (size_t j = j0; j <= t; ++j) {
          double dot = 0;
          for (size_t d = 0; d < kHeadDim; ++d)
            dot += double(q[t * kHidden + hd * kHeadDim + d]) *
                   k[j * kKv + g * kHeadDim + d];
          s[j] = dot * scale();
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (size_t j = j0; j <= t; ++j)
          sum += (s[j] = std::exp(s[j] - mx));
        for (size_t d = 0; d < kHeadDim; ++d) {
          double acc = 0;
          for (size_t j = j0; j <= t; ++j)
            acc += s[j] / sum * v[j * kKv + g * kHeadDim + d];
          attn[hd * kHeadDim + d] = float(acc);
        }
      }
      std::vector<float> o(kHidden), h2(kHidden);
      linear(wo.data(), attn.data(), kHidden, kHidden, o.data());
      for (size_t c = 0; c < kHidden; ++c)
        h2[c] = h[t * kHidden + c] + o[c];
      linear(lm.data(), h2.data(), kVocab, kHidden, &out[t * kVocab]);
    }
    return out;
  }
};

} // namespace fm::test
