// A one-layer model with packed weights for the quantization tests: the
// TinyModel's structure (Embed → QKV MatMul → Dispatch KV write → Attention
// → MatMul accumulate → MatMul to logits) at sizes the packed formats take
// (inputs multiples of 128), with Q2/Q4/Q8 projections, an embedding that
// may be packed and tied to the LM head, and an int8 (or f32) KV cache; and
// a plain C++ reference over the dequantized weights.
#pragma once

#include "ArtifactBuilder.h"
#include "kernels/qgemm.h"
#include "kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace fm::test {

struct QuantModel {
  static constexpr uint32_t kVocab = 48;
  static constexpr uint32_t kHidden = 128;
  static constexpr uint32_t kHeads = 4;
  static constexpr uint32_t kKvHeads = 2;
  static constexpr uint32_t kHeadDim = 32;
  static constexpr uint32_t kKv = kKvHeads * kHeadDim; // 64
  // test_kernels.cpp's fmt_write_kv_{wide,i8} bake in K/V rows of 64 floats
  // at columns 128 and 192 of a 256-float QKV row.
  static constexpr uint32_t kQkvStride = 256;
  // The layer uses slot 1 of a 2-slot cache (slot 0 stays unwritten).
  static constexpr uint32_t kSlot = 1;

  /// How one weight is stored: bits 0 is f32, else the packed format.
  struct Storage {
    int bits = 0;
    int group = 32;
    kernels::QuantGrid grid = kernels::QuantGrid::Balanced;
    bool packed() const { return bits != 0; }
    kernels::QuantFormat format() const { return {bits, group, grid}; }
  };

  struct Options {
    // Q: 8 bits in groups of 128; K and V (stacked, one call): 4 bits,
    // affine, groups of 64; O: 2 bits in groups of 32; the embedding 4 bits.
    Storage embed{4, 32, kernels::QuantGrid::Balanced};
    Storage q{8, 128, kernels::QuantGrid::Balanced};
    Storage kv{4, 64, kernels::QuantGrid::Affine};
    Storage o{2, 32, kernels::QuantGrid::Balanced};
    Storage lm{4, 64, kernels::QuantGrid::Balanced}; // when not tied
    /// The LM head is the embedding weight (a MatMul over the table).
    bool tied = true;
    bool int8Cache = true;
    /// Write every weight as f32 holding its dequantized values (the f32
    /// path over the same effective weights).
    bool floatWeights = false;
    /// Row stride of the attention output (128: dense).
    uint32_t attnStride = 160;
    uint32_t maxRows = 8;
    uint32_t capacity = 32;
    /// An embedded tokenizer (ArtifactBuilder::tokenizerJson), when set.
    std::string tokenizerJson, tokenizerConfig;
    bool withPrefill = true;
    bool withDecode = true;
    /// Q, K, V and O (not the tied table) get the Panel16 copies fmc writes
    /// (WeightVariant "cpu" / "panel16"), K's and V's back to back; with
    /// zeroGemmCopies, copies of that size holding zeros (which a kernel
    /// that reads them shows).
    bool gemmCopies = false;
    bool zeroGemmCopies = false;
  };

  /// Buffers of the arena, in floats, for max_rows R.
  struct Layout {
    uint64_t h, qkv, attn, logits, arena;
  };
  static Layout layout(const Options &o) {
    const uint64_t R = o.maxRows;
    Layout l;
    l.h = 0;
    l.qkv = kHidden * R;
    l.attn = l.qkv + kQkvStride * R;
    l.logits = l.attn + o.attnStride * R;
    l.arena = l.logits + kVocab * R;
    return l;
  }

  std::vector<float> embed, wq, wk, wv, wo, lm; // f32 masters
  float kScale = 1.0f, vScale = 1.0f;

  explicit QuantModel(uint32_t seed = 11) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    auto fill = [&](std::vector<float> &w, size_t n, float scale) {
      w.resize(n);
      for (float &x : w)
        x = u(rng) * scale;
    };
    fill(embed, kVocab * kHidden, 1.0f);
    fill(wq, kHidden * kHidden, 0.2f);
    fill(wk, kKv * kHidden, 0.2f);
    fill(wv, kKv * kHidden, 0.2f);
    fill(wo, kHidden * kHidden, 0.1f);
    fill(lm, kVocab * kHidden, 0.2f);
    // Per-layer KV scales with headroom: k and v depend on the token only
    // (no RoPE), so the largest over the vocabulary is the largest.
    double kMax = 0, vMax = 0;
    std::vector<float> k(kKv), v(kKv);
    for (uint32_t t = 0; t < kVocab; ++t) {
      linear(wk, &embed[t * kHidden], kKv, kHidden, k.data());
      linear(wv, &embed[t * kHidden], kKv, kHidden, v.data());
      for (uint32_t c = 0; c < kKv; ++c) {
        kMax = std::max(kMax, double(std::fabs(k[c])));
        vMax = std::max(vMax, double(std::fabs(v[c])));
      }
    }
    kScale = float(kMax / 100.0);
    vScale = float(vMax / 100.0);
  }

  float scale() const { return 1.0f / std::sqrt(float(kHeadDim)); }

  /// y[N] = w[N][K] · x in double.
  static void linear(const std::vector<float> &w, const float *x, size_t N,
                     size_t K, float *y) {
    for (size_t r = 0; r < N; ++r) {
      double acc = 0;
      for (size_t c = 0; c < K; ++c)
        acc += double(w[r * K + c]) * x[c];
      y[r] = float(acc);
    }
  }

  /// `w` ([N][K]) as the model stores it: dequantized (dequantizeRow of the
  /// rows quantizeRows packs) when packed.
  static std::vector<float> effective(const std::vector<float> &w, int64_t N,
                                      int64_t K, Storage s) {
    if (!s.packed())
      return w;
    const kernels::QuantFormat f = s.format();
    const size_t rowBytes = kernels::packedRowBytes(f, K);
    std::vector<uint8_t> packed(N * rowBytes);
    kernels::quantizeRows(w.data(), N, K, f, packed.data());
    std::vector<float> out(N * K);
    for (int64_t r = 0; r < N; ++r)
      kernels::dequantizeRow(packed.data() + r * rowBytes, f, K, &out[r * K]);
    return out;
  }

  /// The effective weights of a build with `o`.
  struct Weights {
    std::vector<float> embed, wq, wk, wv, wo, lm;
  };
  Weights weights(const Options &o) const {
    Weights w;
    w.embed = effective(embed, kVocab, kHidden, o.embed);
    w.wq = effective(wq, kHidden, kHidden, o.q);
    w.wk = effective(wk, kKv, kHidden, o.kv);
    w.wv = effective(wv, kKv, kHidden, o.kv);
    w.wo = effective(wo, kHidden, kHidden, o.o);
    w.lm = o.tied ? w.embed : effective(lm, kVocab, kHidden, o.lm);
    return w;
  }

  /// As the int8 cache holds x: clamp(roundeven(x / s), -128, 127).
  static int8_t toInt8(float x, float s) {
    float q = std::nearbyint(x / s);
    return static_cast<int8_t>(std::min(127.0f, std::max(-128.0f, q)));
  }

  std::vector<uint8_t> build(const Options &o,
                             const std::vector<uint8_t> &kernelsSo) const {
    ArtifactBuilder b;
    b.vocab = kVocab;
    b.hidden = kHidden;
    b.tokenizerJson = o.tokenizerJson;
    b.tokenizerConfig = o.tokenizerConfig;
    auto add = [&](const std::string &name, const std::vector<float> &data,
                   int64_t N, int64_t K, Storage s) {
      if (o.floatWeights)
        return b.addWeight(name, {N, K}, effective(data, N, K, s));
      if (s.packed())
        return b.addQuantWeight(name, N, K, data, s.format());
      return b.addWeight(name, {N, K}, data);
    };
    const std::string sa = "model.layers.0.self_attn";
    const uint32_t E =
        add("model.embed_tokens.weight", embed, kVocab, kHidden, o.embed);
    const uint32_t Q = add(sa + ".q_proj.weight", wq, kHidden, kHidden, o.q);
    const uint32_t K = add(sa + ".k_proj.weight", wk, kKv, kHidden, o.kv);
    const uint32_t V = add(sa + ".v_proj.weight", wv, kKv, kHidden, o.kv);
    const uint32_t O = add(sa + ".o_proj.weight", wo, kHidden, kHidden, o.o);
    const uint32_t L =
        o.tied ? E : add("lm_head.weight", lm, kVocab, kHidden, o.lm);
    if (o.gemmCopies && !o.floatWeights)
      for (auto [index, rows, s] : {std::tuple{Q, int64_t(kHidden), o.q},
                                    std::tuple{K, int64_t(kKv), o.kv},
                                    std::tuple{V, int64_t(kKv), o.kv},
                                    std::tuple{O, int64_t(kHidden), o.o}})
        if (s.packed()) {
          std::vector<uint8_t> copy = kernels::repackForGemm(
              kernels::GemmLayout::Panel16, s.format(), rows, kHidden,
              b.weightBytes(index).data());
          if (o.zeroGemmCopies)
            std::fill(copy.begin(), copy.end(), 0);
          b.addVariant(index, "cpu", kernels::kPanel16LayoutName, std::move(copy));
        }
    const uint32_t KS = b.addScalar(sa + ".k_scale", kScale);
    const uint32_t VS = b.addScalar(sa + ".v_scale", vScale);
    const uint32_t cache =
        b.addCache("kv", 2, kKvHeads, kHeadDim, o.capacity,
                   o.int8Cache ? fa::DType::I8 : fa::DType::F32);
    b.setExecutable("elf-so", "x86_64-unknown-linux-gnu",
                    {"fmt_write_kv_wide", "fmt_write_kv_i8"}, kernelsSo);

    const Layout l = layout(o);
    auto program = [&]() {
      std::vector<ArtifactBuilder::Cmd> cmds;
      cmds.push_back(b.embed(E, buf(l.h, kHidden, kHidden), "model.embed_tokens"));
      // One MatMul over Q, K, V: Q in its format, K and V (adjacent, one
      // format) as one call; y's rows are wider than either part.
      cmds.push_back(b.matmul(buf(l.h, kHidden, kHidden), {Q, K, V},
                              buf(l.qkv, kQkvStride, kQkvStride), kHidden,
                              kQkvStride, false, sa));
      const fa::BufferRef kRows = buf(l.qkv + 128, kQkvStride, kKv);
      const fa::BufferRef vRows = buf(l.qkv + 192, kQkvStride, kKv);
      if (o.int8Cache)
        cmds.push_back(b.dispatch(
            1,
            {b.bufferArg(kRows), b.bufferArg(vRows), b.weightArg(KS),
             b.weightArg(VS), b.cacheArg(fa::ArgKind::CacheK, cache, kSlot),
             b.cacheArg(fa::ArgKind::CacheV, cache, kSlot)},
            sa));
      else
        cmds.push_back(b.dispatch(
            0,
            {b.bufferArg(kRows), b.bufferArg(vRows),
             b.cacheArg(fa::ArgKind::CacheK, cache, kSlot),
             b.cacheArg(fa::ArgKind::CacheV, cache, kSlot)},
            sa));
      const fa::BufferRef q = buf(l.qkv, kQkvStride, kHidden);
      const fa::BufferRef attn = buf(l.attn, o.attnStride, kHidden);
      if (o.int8Cache)
        cmds.push_back(b.attentionI8(q, attn, cache, kSlot, kHeads, kKvHeads,
                                     kHeadDim, scale(), int32_t(KS),
                                     int32_t(VS), 0, sa));
      else
        cmds.push_back(b.attention(q, attn, cache, kSlot, kHeads, kKvHeads,
                                   kHeadDim, scale(), 0, sa));
      cmds.push_back(b.matmul(attn, {O}, buf(l.h, kHidden, kHidden), kHidden,
                              kHidden, /*accumulate=*/true, sa + ".o_proj"));
      cmds.push_back(b.matmul(buf(l.h, kHidden, kHidden), {L},
                              buf(l.logits, kVocab, kVocab), kHidden, kVocab,
                              false, "lm_head"));
      return cmds;
    };
    if (o.withPrefill)
      b.addProgram("prefill", o.maxRows, l.arena, buf(l.logits, kVocab, kVocab),
                   false, program());
    if (o.withDecode)
      b.addProgram("decode", 1, l.arena, buf(l.logits, kVocab, kVocab), false,
                   program());
    return b.finish();
  }

  /// Causal teacher-forced logits of every position ([n][vocab]) over the
  /// effective weights with exact activations; the cache rounds K and V to
  /// int8 when o.int8Cache.
  std::vector<float> reference(const std::vector<int32_t> &tokens,
                               const Options &o) const {
    const Weights w = weights(o);
    const size_t n = tokens.size();
    std::vector<float> h(n * kHidden), q(n * kHidden), k(n * kKv), v(n * kKv);
    for (size_t t = 0; t < n; ++t) {
      std::copy_n(&w.embed[size_t(tokens[t]) * kHidden], kHidden, &h[t * kHidden]);
      linear(w.wq, &h[t * kHidden], kHidden, kHidden, &q[t * kHidden]);
      linear(w.wk, &h[t * kHidden], kKv, kHidden, &k[t * kKv]);
      linear(w.wv, &h[t * kHidden], kKv, kHidden, &v[t * kKv]);
      if (o.int8Cache)
        for (size_t c = 0; c < kKv; ++c) {
          k[t * kKv + c] = toInt8(k[t * kKv + c], kScale) * kScale;
          v[t * kKv + c] = toInt8(v[t * kKv + c], vScale) * vScale;
        }
    }
    std::vector<float> out(n * kVocab);
    for (size_t t = 0; t < n; ++t) {
      std::vector<float> attn(kHidden), o2(kHidden), h2(kHidden);
      attend(&q[t * kHidden], k.data(), v.data(), t, attn.data());
      linear(w.wo, attn.data(), kHidden, kHidden, o2.data());
      for (size_t c = 0; c < kHidden; ++c)
        h2[c] = h[t * kHidden + c] + o2[c];
      linear(w.lm, h2.data(), kVocab, kHidden, &out[t * kVocab]);
    }
    return out;
  }

  /// Causal attention of the query row `q` at position t over K/V rows
  /// 0..t ([*][kKv]), in double.
  void attend(const float *q, const float *k, const float *v, size_t t,
              float *out) const {
    for (size_t hd = 0; hd < kHeads; ++hd) {
      const size_t g = hd / (kHeads / kKvHeads);
      std::vector<double> s(t + 1);
      double mx = -1e300;
      for (size_t j = 0; j <= t; ++j) {
        double dot = 0;
        for (size_t d = 0; d < kHeadDim; ++d)
          dot += double(q[hd * kHeadDim + d]) * k[j * kKv + g * kHeadDim + d];
        s[j] = dot * scale();
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (size_t j = 0; j <= t; ++j)
        sum += (s[j] = std::exp(s[j] - mx));
      for (size_t d = 0; d < kHeadDim; ++d) {
        double acc = 0;
        for (size_t j = 0; j <= t; ++j)
          acc += s[j] / sum * v[j * kKv + g * kHeadDim + d];
        out[hd * kHeadDim + d] = float(acc);
      }
    }
  }
};

} // namespace fm::test
