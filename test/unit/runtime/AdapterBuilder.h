// Builds .fmba LoRA adapters in memory for the runtime tests (and the
// adapter fuzzer's seed corpus), independently of the compiler's writer,
// with knobs to break each part on purpose; and LoraBase, a small base
// model with a stacked projection whose logits plain C++ computes.
#pragma once

#include "ArtifactBuilder.h"

#include "fm/fmba_generated.h"
#include "fm/format.h"
#include "kernels/lora.h"
#include "kernels/matmul.h"
#include "kernels/quantize.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace fm::test {

namespace fad = fm::adapter;

/// One lora of a test adapter: A [rank][in] and B [out][rank] as floats.
struct TestLora {
  std::string weight;
  int64_t rank = 0, in = 0, out = 0;
  float scale = 1.0f;
  std::vector<float> a, b;
  bool q8 = false; // store as q8 (groups of 32) where the width allows, else f16
  // Overrides of what is written (negative: as computed).
  int64_t aRows = -1, aCols = -1, btCols = -1, aOffset = -1, aSize = -1;
  int aGroup = -1;
  int dtypeOverride = -1; // raw DType of A
};

class AdapterBuilder {
public:
  uint32_t schemaVersion = fm::format::kAdapterSchemaVersion;
  std::string identifier = fm::format::kAdapterFileIdentifier;
  std::string family = "test";
  uint32_t vocab = 0, hidden = 0, layers = 1;
  std::vector<uint8_t> sourceDigest = std::vector<uint8_t>(32, 7);
  bool corruptDigest = false;
  bool dropDigest = false;
  int64_t dataSizeOverride = -1;
  std::vector<TestLora> loras;

  /// The values as the file stores them (f16 or q8 rounding), for the
  /// reference: A [rank][in], B [out][rank].
  /// Whether a q8 lora stores a matrix of `cols` columns as q8 (as the
  /// compiler's writer does: when they fill groups of 32).
  static bool asQ8(bool q8, int64_t cols) { return q8 && cols % 32 == 0; }

  static std::vector<float> stored(const std::vector<float> &v, int64_t rows,
                                   int64_t cols, bool q8) {
    std::vector<float> out(v.size());
    if (!asQ8(q8, cols)) {
      for (size_t i = 0; i < v.size(); ++i)
        out[i] = kernels::halfToFloat(kernels::floatToHalf(v[i]));
      return out;
    }
    const kernels::QuantFormat f{8, 32, kernels::QuantGrid::Balanced};
    std::vector<uint8_t> packed(size_t(rows) * kernels::packedRowBytes(f, cols));
    kernels::quantizeRows(v.data(), rows, cols, f, packed.data());
    for (int64_t r = 0; r < rows; ++r)
      kernels::dequantizeRow(packed.data() + r * kernels::packedRowBytes(f, cols),
                             f, cols, out.data() + r * cols);
    return out;
  }

  std::vector<uint8_t> finish() {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.ForceDefaults(true);
    std::vector<uint8_t> data;
    auto place = [&](const std::vector<float> &v, int64_t rows, int64_t cols,
                     bool wantQ8) {
      const bool q8 = asQ8(wantQ8, cols);
      data.resize(format::alignData(data.size()));
      const uint64_t offset = data.size();
      const size_t bytes = kernels::loraMatrixBytes(rows, cols, q8, 32);
      data.resize(offset + bytes);
      if (q8) {
        kernels::quantizeRows(v.data(), rows, cols,
                              {8, 32, kernels::QuantGrid::Balanced},
                              data.data() + offset);
      } else {
        for (size_t i = 0; i < v.size(); ++i) {
          const uint16_t h = kernels::floatToHalf(v[i]);
          std::memcpy(data.data() + offset + 2 * i, &h, 2);
        }
      }
      return std::make_pair(offset, uint64_t(bytes));
    };
    std::vector<flatbuffers::Offset<fad::Lora>> out;
    for (const TestLora &l : loras) {
      auto [ao, as] = place(l.a, l.rank, l.in, l.q8);
      std::vector<float> bt(size_t(l.rank * l.out));
      for (int64_t o = 0; o < l.out; ++o)
        for (int64_t i = 0; i < l.rank; ++i)
          bt[i * l.out + o] = l.b[o * l.rank + i];
      auto [bo, bs] = place(bt, l.rank, l.out, l.q8);
      const bool aq = asQ8(l.q8, l.in), bq = asQ8(l.q8, l.out);
      auto a = fad::CreateMatrix(
          fbb,
          l.dtypeOverride >= 0 ? fad::DType(l.dtypeOverride)
                               : aq ? fad::DType::Q8 : fad::DType::F16,
          uint32_t(l.aRows >= 0 ? l.aRows : l.rank),
          uint32_t(l.aCols >= 0 ? l.aCols : l.in),
          l.aOffset >= 0 ? uint64_t(l.aOffset) : ao,
          l.aSize >= 0 ? uint64_t(l.aSize) : as,
          uint32_t(l.aGroup >= 0 ? l.aGroup : (aq ? 32 : 0)));
      auto b = fad::CreateMatrix(fbb, bq ? fad::DType::Q8 : fad::DType::F16,
                                 uint32_t(l.rank),
                                 uint32_t(l.btCols >= 0 ? l.btCols : l.out), bo,
                                 bs, bq ? 32 : 0);
      out.push_back(fad::CreateLoraDirect(fbb, l.weight.c_str(), "", uint32_t(l.rank),
                                          l.scale * float(l.rank), l.scale, a, b));
    }
    data.resize(format::alignData(data.size()));
    fad::Digest sd(flatbuffers::span<const uint8_t, 32>(
        sourceDigest.size() == 32 ? sourceDigest.data() : zeros_, 32));
    auto base = fad::CreateBaseDirect(fbb, family.c_str(), "test-model", vocab,
                                      hidden, layers, &sd, "");
    const fad::Digest zero;
    auto root = fad::CreateAdapterDirect(
        fbb, schemaVersion, "test-adapter", base, &out,
        dataSizeOverride >= 0 ? uint64_t(dataSizeOverride) : data.size(),
        dropDigest ? nullptr : &zero, "{}");
    fbb.FinishSizePrefixed(root, identifier.c_str());
    std::vector<uint8_t> file(fbb.GetBufferPointer(),
                              fbb.GetBufferPointer() + fbb.GetSize());
    file.resize(format::alignData(file.size()));
    file.insert(file.end(), data.begin(), data.end());
    if (!dropDigest && identifier == fm::format::kAdapterFileIdentifier)
      reseal(file, corruptDigest);
    return file;
  }

  /// Recomputes the digest of a finished file (after a test changed it).
  static void reseal(std::vector<uint8_t> &file, bool corrupt = false) {
    const auto *root = fad::GetSizePrefixedAdapter(file.data());
    const size_t at =
        reinterpret_cast<const uint8_t *>(root->digest()) - file.data();
    uint32_t n;
    std::memcpy(&n, file.data(), 4);
    const uint64_t end = std::min<uint64_t>(
        file.size(), format::alignData(4 + uint64_t(n)) + root->data_size());
    format::Digest d = format::programDigest(file.data(), end, at);
    if (corrupt)
      d[0] ^= 1;
    std::copy(d.begin(), d.end(), file.begin() + at);
  }

private:
  uint8_t zeros_[32] = {};
};

/// Embed → MatMul [wq; wk] (stacked, n = 32) → MatMul wo (accumulating into
/// x) → MatMul lm (logits); no attention, so every row is independent and
/// plain C++ gives the logits for any merged weights.
struct LoraBase {
  static constexpr int64_t kVocab = 20, kHidden = 32, kQ = 16, kK = 16;
  std::vector<float> embed, wq, wk, wo, lm;
  std::vector<uint8_t> sourceDigest = std::vector<uint8_t>(32, 7);

  explicit LoraBase(uint32_t seed = 3) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    auto fill = [&](std::vector<float> &w, size_t n) {
      w.resize(n);
      for (float &x : w)
        x = u(rng);
    };
    fill(embed, kVocab * kHidden);
    fill(wq, kQ * kHidden);
    fill(wk, kK * kHidden);
    fill(wo, kHidden * (kQ + kK));
    fill(lm, kVocab * kHidden);
  }

  std::vector<uint8_t> build(bool withSourceDigest = true,
                             const std::string &family = "test") const {
    ArtifactBuilder b;
    b.family = family;
    b.vocab = kVocab;
    b.hidden = kHidden;
    if (withSourceDigest)
      b.sourceDigest = sourceDigest;
    const uint32_t E = b.addWeight("model.embed_tokens.weight", {kVocab, kHidden}, embed);
    const uint32_t Q = b.addWeight("model.layers.0.self_attn.q_proj.weight", {kQ, kHidden}, wq);
    const uint32_t K = b.addWeight("model.layers.0.self_attn.k_proj.weight", {kK, kHidden}, wk);
    const uint32_t O = b.addWeight("model.layers.0.self_attn.o_proj.weight",
                                   {kHidden, kQ + kK}, wo);
    const uint32_t L = b.addWeight("lm_head.weight", {kVocab, kHidden}, lm);
    const fa::BufferRef x = buf(0, kHidden, kHidden), h = buf(128, kQ + kK, kQ + kK),
                        logits = buf(256, kVocab, kVocab);
    for (auto [phase, rows] : {std::make_pair("prefill", 4u), std::make_pair("decode", 1u)}) {
      std::vector<ArtifactBuilder::Cmd> c;
      c.push_back(b.embed(E, x, "model.embed_tokens"));
      c.push_back(b.matmul(x, {Q, K}, h, kHidden, kQ + kK, false, "model.layers.0.self_attn"));
      c.push_back(b.matmul(h, {O}, x, kQ + kK, kHidden, true, "model.layers.0.self_attn"));
      c.push_back(b.matmul(x, {L}, logits, kHidden, kVocab, false, "lm_head"));
      b.addProgram(phase, rows, 336, logits, false, c);
    }
    return b.finish();
  }

  /// A LoRA of `weight` with random A and B of rank r.
  static TestLora lora(const std::string &weight, int64_t rank, int64_t in,
                       int64_t out, float scale, uint32_t seed, bool q8 = false) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 0.3f);
    TestLora l;
    l.weight = weight;
    l.rank = rank;
    l.in = in;
    l.out = out;
    l.scale = scale;
    l.q8 = q8;
    l.a.resize(size_t(rank * in));
    l.b.resize(size_t(out * rank));
    for (float &v : l.a)
      v = nd(rng);
    for (float &v : l.b)
      v = nd(rng);
    return l;
  }

  /// W + Σ scale · s · B·A of the loras on `name`.
  std::vector<float> merged(const std::string &name, const std::vector<float> &w,
                            int64_t out, int64_t in,
                            const std::vector<std::pair<const AdapterBuilder *, float>>
                                &adapters) const {
    std::vector<double> m(w.begin(), w.end());
    for (const auto &[adapter, scale] : adapters)
      for (const TestLora &l : adapter->loras) {
        if (l.weight != name)
          continue;
        const std::vector<float> a = AdapterBuilder::stored(l.a, l.rank, l.in, l.q8);
        std::vector<float> bt(size_t(l.rank * l.out));
        for (int64_t o = 0; o < l.out; ++o)
          for (int64_t i = 0; i < l.rank; ++i)
            bt[i * l.out + o] = l.b[o * l.rank + i];
        bt = AdapterBuilder::stored(bt, l.rank, l.out, l.q8);
        for (int64_t o = 0; o < out; ++o)
          for (int64_t k = 0; k < in; ++k) {
            double d = 0;
            for (int64_t i = 0; i < l.rank; ++i)
              d += double(bt[i * out + o]) * a[i * in + k];
            m[o * in + k] += double(scale) * l.scale * d;
          }
      }
    return std::vector<float>(m.begin(), m.end());
  }

  /// Logits [tokens][vocab] of the model with the adapters merged.
  std::vector<double> logits(const std::vector<int32_t> &tokens,
                             const std::vector<std::pair<const AdapterBuilder *, float>>
                                 &adapters = {}) const {
    const auto q = merged("model.layers.0.self_attn.q_proj.weight", wq, kQ, kHidden, adapters);
    const auto k = merged("model.layers.0.self_attn.k_proj.weight", wk, kK, kHidden, adapters);
    const auto o = merged("model.layers.0.self_attn.o_proj.weight", wo, kHidden, kQ + kK, adapters);
    const auto l = merged("lm_head.weight", lm, kVocab, kHidden, adapters);
    std::vector<double> out;
    for (int32_t t : tokens) {
      std::vector<double> x(embed.begin() + t * kHidden, embed.begin() + (t + 1) * kHidden);
      std::vector<double> h(kQ + kK, 0.0);
      for (int64_t j = 0; j < kQ; ++j)
        for (int64_t c = 0; c < kHidden; ++c)
          h[j] += q[j * kHidden + c] * x[c];
      for (int64_t j = 0; j < kK; ++j)
        for (int64_t c = 0; c < kHidden; ++c)
          h[kQ + j] += k[j * kHidden + c] * x[c];
      for (int64_t j = 0; j < kHidden; ++j)
        for (int64_t c = 0; c < kQ + kK; ++c)
          x[j] += o[j * (kQ + kK) + c] * h[c];
      for (int64_t v = 0; v < kVocab; ++v) {
        double s = 0;
        for (int64_t c = 0; c < kHidden; ++c)
          s += l[v * kHidden + c] * x[c];
        out.push_back(s);
      }
    }
    return out;
  }

  /// An adapter for this base on every projection (q, k stacked; o; lm).
  AdapterBuilder adapter(uint32_t seed, int64_t rank, float scale,
                         bool q8 = false) const {
    AdapterBuilder a;
    a.vocab = kVocab;
    a.hidden = kHidden;
    a.sourceDigest = sourceDigest;
    a.loras.push_back(lora("model.layers.0.self_attn.q_proj.weight", rank, kHidden, kQ, scale, seed, q8));
    a.loras.push_back(lora("model.layers.0.self_attn.k_proj.weight", rank, kHidden, kK, scale, seed + 1, q8));
    a.loras.push_back(lora("model.layers.0.self_attn.o_proj.weight", rank, kQ + kK, kHidden, scale, seed + 2, q8));
    a.loras.push_back(lora("lm_head.weight", rank, kHidden, kVocab, scale, seed + 3, q8));
    return a;
  }
};

} // namespace fm::test
