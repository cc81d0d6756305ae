// Quantized models through the runtime: Q2/Q4/Q8 MatMul weights (mixed in
// one command), a packed embedding tied to the LM head, an int8 KV cache
// written by generated code, and Moe with packed experts. Each stage is
// checked against an exact reference within the qmatmul error bound (the
// kernels' activation rounding); whole logits against the plain
// reference and against the f32 path over the same effective weights.
#include "ArtifactBuilder.h"
#include "LoadedArtifact.h"
#include "QuantModel.h"
#include "hal/cpu/QuantMoe.h"
#include "fm/runtime.h"
#include "kernels/moe.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

namespace fm::test {
namespace {

using Storage = QuantModel::Storage;
using kernels::QuantGrid;

const std::vector<uint8_t> &kernelsSo() {
  static const std::vector<uint8_t> image = readFile(FM_TEST_KERNELS_SO);
  return image;
}

const std::vector<int32_t> kTokens = {3, 17, 0, 39, 5, 5, 22, 11, 8, 1, 47, 2, 14};

// The bound of qmatmul_test.cpp for one output y = w · x (w as stored) with
// the default int8x2 activations: |y - exact| <= 1.001 * Σ_k |w_k| * dx_k /
// 256 + f32 rounding, where dx_k = amax / 127 is the first digit's step in
// x's block of min(group, 64) inputs (the second digit rounds to dx_k / 256,
// clamped at +-127 steps). Float weights: f32 rounding only.
double outputBound(const float *w, const float *x, int64_t K, Storage s) {
  double mag = 0.0, roundErr = 0.0;
  const int64_t block = s.packed() ? std::min(s.group, 64) : K;
  for (int64_t b0 = 0; b0 < K; b0 += block) {
    double amax = 0.0;
    for (int64_t k = b0; k < b0 + block; ++k)
      amax = std::max(amax, std::fabs(double(x[k])));
    for (int64_t k = b0; k < b0 + block; ++k) {
      mag += std::fabs(double(w[k]) * x[k]);
      roundErr += std::fabs(double(w[k])) * amax / 127.0 / 256.0;
    }
  }
  return (s.packed() ? 1.001 * roundErr : 0.0) + 3e-5 * (mag + 1.0);
}

double dot(const float *w, const float *x, int64_t K) {
  double acc = 0.0;
  for (int64_t k = 0; k < K; ++k)
    acc += double(w[k]) * x[k];
  return acc;
}

// A model's artifact, generated code and executor, without the Session:
// the tests read the arena and the caches after a run.
struct Opened {
  std::unique_ptr<LoadedArtifact> loaded;
  std::unique_ptr<rt::Executor> exec;
};

Opened open(const std::vector<uint8_t> &file, int threads) {
  Opened o;
  o.loaded = std::make_unique<LoadedArtifact>();
  if (!o.loaded->load(file, "quant.fmb", /*withExecutable=*/true))
    return o;
  auto exec = o.loaded->executor(threads);
  EXPECT_TRUE(exec.isOk()) << exec.message();
  if (exec)
    o.exec = std::move(*exec);
  return o;
}

std::shared_ptr<Model> load(const std::vector<uint8_t> &file) {
  auto model = Model::loadFromBuffer(file.data(), file.size(), "quant.fmb");
  EXPECT_TRUE(model.isOk()) << model.message();
  return model ? *model : nullptr;
}

struct Variant {
  const char *name;
  QuantModel::Options options;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  QuantModel::Options o; // Q8 / Q4 affine / Q2, q4 embedding tied, i8 cache
  v.push_back({"mixed-tied-i8", o});
  o.attnStride = 128;
  o.embed = {8, 64, QuantGrid::Affine};
  v.push_back({"q8-embedding-dense-attn", o});
  o = {};
  o.tied = false;
  o.embed = {};                              // f32 table
  o.q = {2, 64, QuantGrid::Affine};          // q, k, v all q2 g64 affine:
  o.kv = {2, 64, QuantGrid::Affine};         // one call for the stack
  o.o = {8, 32, QuantGrid::Balanced};
  o.lm = {4, 128, QuantGrid::Affine};
  o.int8Cache = false;
  v.push_back({"untied-f32-cache", o});
  o.int8Cache = true;
  o.embed = {2, 128, QuantGrid::Balanced};
  v.push_back({"q2-embedding-i8", o});
  o = {};
  o.q = {};     // f32 q beside packed k and v in one command
  v.push_back({"f32-q-packed-kv", o});
  return v;
}

// After a run of `tokens` (rows) at `pos`: every stage of those rows
// against an exact computation from the stage's own input as the runtime
// left it, within the qmatmul bound; the cache rows exactly.
void checkStages(const QuantModel &model, const QuantModel::Options &o,
                 const rt::Executor &exec, const int32_t *tokens, int64_t rows,
                 int64_t pos) {
  using M = QuantModel;
  const QuantModel::Weights w = model.weights(o);
  const QuantModel::Layout l = M::layout(o);
  const float *arena = reinterpret_cast<const float *>(exec.arena());
  const Storage qS = o.floatWeights ? Storage{} : o.q;
  const Storage kvS = o.floatWeights ? Storage{} : o.kv;
  const Storage oS = o.floatWeights ? Storage{} : o.o;
  const Storage lmS = o.floatWeights ? Storage{} : (o.tied ? o.embed : o.lm);
  const uint8_t *k8 =
      static_cast<const uint8_t *>(exec.cacheRows(0, M::kSlot, false));
  const uint8_t *v8 =
      static_cast<const uint8_t *>(exec.cacheRows(0, M::kSlot, true));
  const size_t elem = o.int8Cache ? 1 : 4;
  auto cacheValue = [&](const uint8_t *base, int64_t j, int64_t c, float s) {
    if (o.int8Cache)
      return float(static_cast<int8_t>(base[j * M::kKv + c])) * s;
    float f;
    std::memcpy(&f, base + (j * M::kKv + c) * elem, 4);
    return f;
  };
  for (int64_t r = 0; r < rows; ++r) {
    SCOPED_TRACE("row " + std::to_string(r) + " at position " +
                 std::to_string(pos + r));
    const float *h0 = &w.embed[size_t(tokens[r]) * M::kHidden]; // embed, exact
    // QKV: one MatMul over three weights in two formats.
    const float *qkv = arena + l.qkv + r * M::kQkvStride;
    for (uint32_t c = 0; c < M::kQkvStride; ++c) {
      const float *wr = c < 128   ? &w.wq[c * M::kHidden]
                        : c < 192 ? &w.wk[(c - 128) * M::kHidden]
                                  : &w.wv[(c - 192) * M::kHidden];
      const Storage s = c < 128 ? qS : kvS;
      ASSERT_NEAR(qkv[c], dot(wr, h0, M::kHidden),
                  outputBound(wr, h0, M::kHidden, s))
          << "qkv column " << c;
    }
    // The cache rows the generated code wrote into slot 1 (slot 0 unused).
    const int64_t j = pos + r;
    for (uint32_t c = 0; c < M::kKv; ++c) {
      if (o.int8Cache) {
        ASSERT_EQ(static_cast<int8_t>(k8[j * M::kKv + c]),
                  M::toInt8(qkv[128 + c], model.kScale));
        ASSERT_EQ(static_cast<int8_t>(v8[j * M::kKv + c]),
                  M::toInt8(qkv[192 + c], model.vScale));
      } else {
        ASSERT_EQ(cacheValue(k8, j, c, 1.0f), qkv[128 + c]);
        ASSERT_EQ(cacheValue(v8, j, c, 1.0f), qkv[192 + c]);
      }
    }
    for (bool part : {false, true}) {
      const uint8_t *slot0 =
          static_cast<const uint8_t *>(exec.cacheRows(0, 0, part));
      for (size_t b = 0; b < M::kKv * elem; ++b)
        ASSERT_EQ(slot0[j * M::kKv * elem + b], 0) << "slot 0 was written";
    }
    // Attention over the cache as the runtime holds it (int8 * scale).
    std::vector<float> keys((j + 1) * M::kKv), values((j + 1) * M::kKv);
    double vMax = 0.0;
    for (int64_t jj = 0; jj <= j; ++jj)
      for (uint32_t c = 0; c < M::kKv; ++c) {
        keys[jj * M::kKv + c] = cacheValue(k8, jj, c, model.kScale);
        values[jj * M::kKv + c] = cacheValue(v8, jj, c, model.vScale);
        vMax = std::max(vMax, double(std::fabs(values[jj * M::kKv + c])));
      }
    std::vector<float> want(M::kHidden);
    model.attend(qkv, keys.data(), values.data(), size_t(j), want.data());
    const float *attn = arena + l.attn + r * o.attnStride;
    for (uint32_t c = 0; c < M::kHidden; ++c)
      ASSERT_NEAR(attn[c], want[c], 1e-4 * (1.0 + vMax)) << "attention " << c;
    // h += attn · Woᵀ.
    const float *h = arena + l.h + r * M::kHidden;
    for (uint32_t c = 0; c < M::kHidden; ++c) {
      const float *wr = &w.wo[c * M::kHidden];
      ASSERT_NEAR(h[c], h0[c] + dot(wr, attn, M::kHidden),
                  outputBound(wr, attn, M::kHidden, oS) + 1e-6 * std::fabs(h0[c]))
          << "residual " << c;
    }
    // The LM head (the embedding table when tied).
    const float *logits = arena + l.logits + r * M::kVocab;
    for (uint32_t c = 0; c < M::kVocab; ++c) {
      const float *wr = &w.lm[c * M::kHidden];
      ASSERT_NEAR(logits[c], dot(wr, h, M::kHidden),
                  outputBound(wr, h, M::kHidden, lmS))
          << "logit " << c;
    }
  }
}

TEST(Quant, StagesWithinKernelBounds) {
  QuantModel model;
  for (Variant v : variants()) {
    for (bool floatWeights : {false, true}) {
      v.options.floatWeights = floatWeights;
      SCOPED_TRACE(std::string(v.name) + (floatWeights ? " f32-weights" : ""));
      auto file = model.build(v.options, kernelsSo());
      for (int threads : {1, 3}) {
        SCOPED_TRACE("threads " + std::to_string(threads));
        Opened o = open(file, threads);
        ASSERT_TRUE(o.exec);
        const int prefill = o.exec->findProgram("prefill");
        const int decode = o.exec->findProgram("decode");
        ASSERT_TRUE(o.exec->run(prefill, kTokens.data(), 7, 0).isOk());
        checkStages(model, v.options, *o.exec, kTokens.data(), 7, 0);
        ASSERT_TRUE(o.exec->run(decode, kTokens.data() + 7, 1, 7).isOk());
        checkStages(model, v.options, *o.exec, kTokens.data() + 7, 1, 7);
        ASSERT_TRUE(o.exec->run(prefill, kTokens.data() + 8, 5, 8).isOk());
        checkStages(model, v.options, *o.exec, kTokens.data() + 8, 5, 8);
      }
    }
  }
}

// The largest |a - b| over `n` values, relative to the largest |b|.
double relativeMaxError(const float *a, const float *b, size_t n) {
  double err = 0.0, mag = 0.0;
  for (size_t i = 0; i < n; ++i) {
    err = std::max(err, double(std::fabs(a[i] - b[i])));
    mag = std::max(mag, double(std::fabs(b[i])));
  }
  return err / mag;
}

TEST(Quant, LogitsMatchReference) {
  QuantModel model;
  for (const Variant &v : variants()) {
    SCOPED_TRACE(v.name);
    auto m = load(model.build(v.options, kernelsSo()));
    ASSERT_TRUE(m);
    std::vector<float> want = model.reference(kTokens, v.options);
    for (int threads : {1, 2}) {
      Session session(m, SessionOptions{threads});
      auto logits = session.prefill(kTokens, /*allLogits=*/true);
      ASSERT_TRUE(logits.isOk()) << logits.message();
      const double err = relativeMaxError(logits->data, want.data(), want.size());
      std::printf("  %s, %d threads: max |logit - reference| = %.2e of max |logit|\n",
                  v.name, threads, err);
      // The stages are held to the kernels' bounds above. End to end the
      // int8x2 activations (~2e-5 of max |y| per matmul, qmatmul.h) of four
      // chained matmuls and the K/V rounding: measured <= 2.5e-5 here.
      EXPECT_LT(err, 1e-3);
    }
  }
}

// Logits of `tokens` through a fresh session (all rows, chunks of `chunk`).
std::vector<float> logitsOf(
    const std::shared_ptr<Model> &m, const std::vector<int32_t> &tokens,
    int64_t chunk, int threads = 1,
    SessionOptions::Activations act = SessionOptions::Activations::Int8x2) {
  SessionOptions options{threads};
  options.activations = act;
  Session session(m, options);
  auto logits = session.prefill(tokens, /*allLogits=*/true, chunk);
  EXPECT_TRUE(logits.isOk()) << logits.message();
  if (!logits)
    return {};
  return std::vector<float>(logits->data,
                            logits->data + logits->rows * logits->vocab);
}

// Rows of `got` whose argmax differs from `want`'s where `want`'s top two
// are more than `margin` apart.
int clearArgmaxMismatches(const std::vector<float> &got,
                          const std::vector<float> &want, size_t vocab,
                          double margin) {
  int mismatches = 0;
  for (size_t r = 0; r < want.size() / vocab; ++r) {
    const float *g = &got[r * vocab], *w = &want[r * vocab];
    const size_t best = std::max_element(w, w + vocab) - w;
    double second = -1e30;
    for (size_t c = 0; c < vocab; ++c)
      if (c != best)
        second = std::max(second, double(w[c]));
    if (w[best] - second > margin &&
        size_t(std::max_element(g, g + vocab) - g) != best)
      ++mismatches;
  }
  return mismatches;
}

// The f32 path over the same (dequantized) weights, and an f32 cache in
// place of the int8 one: the differences are the activation rounding and
// the K/V rounding only.
TEST(Quant, AgreesWithFloatPath) {
  QuantModel model;
  for (const Variant &v : variants()) {
    SCOPED_TRACE(v.name);
    QuantModel::Options f = v.options;
    f.floatWeights = true;
    auto q = logitsOf(load(model.build(v.options, kernelsSo())), kTokens, 0);
    auto fl = logitsOf(load(model.build(f, kernelsSo())), kTokens, 0);
    ASSERT_EQ(q.size(), fl.size());
    const double err = relativeMaxError(q.data(), fl.data(), fl.size());
    std::printf("  %s: packed vs f32 weights: %.2e of max |logit|\n", v.name, err);
    EXPECT_LT(err, 1e-3); // measured <= 2.5e-5
    double mag = 0;
    for (float x : fl)
      mag = std::max(mag, double(std::fabs(x)));
    EXPECT_EQ(clearArgmaxMismatches(q, fl, QuantModel::kVocab, 0.06 * mag), 0);
    if (v.options.int8Cache) {
      QuantModel::Options c = v.options;
      c.int8Cache = false;
      auto f32Cache = logitsOf(load(model.build(c, kernelsSo())), kTokens, 0);
      const double cacheErr =
          relativeMaxError(q.data(), f32Cache.data(), f32Cache.size());
      std::printf("  %s: i8 vs f32 cache: %.2e of max |logit|\n", v.name,
                  cacheErr);
      EXPECT_LT(cacheErr, 3e-2);
    }
  }
}

TEST(Quant, ChunkingAndDecodeAgree) {
  // The GEMM (M > 1, qgemm over the Panel16 copy) and matvec (M = 1) paths
  // quantize each row of x alike; only the order of float sums differs. A
  // sum-order difference can still move one of a later layer's activations
  // across an int8x2 rounding boundary, a step of 1 / (127 * 256) ~ 3e-5 of
  // its block's maximum: measured 2.0e-5 of max |logit| (untied-f32-cache,
  // chunk 1), against 1e-4. That holds for int8x2, which both paths take.
  // --activations int11 prefills w4 g32 weights with int11 GEMMs where the
  // CPU has AMX and decodes them with int8x2: measured <= 2.4e-4 (chunk 1),
  // against 1e-3. There its whole prefill differs from int8x2's (it does
  // take the 11-bit GEMM); elsewhere int11 is int8x2, bit for bit. The 13
  // tokens in one prefill of up to 16 rows: more than the matvec takes
  // (kernels/isa.h kMatvecMaxRows), so qgemm runs them.
  QuantModel model;
  using A = SessionOptions::Activations;
  int differing = 0;
  for (const Variant &v : variants()) {
    SCOPED_TRACE(v.name);
    QuantModel::Options options = v.options;
    options.maxRows = 16;
    auto m = load(model.build(options, kernelsSo()));
    ASSERT_TRUE(m);
    std::vector<float> int8x2; // Int8x2 runs first
    for (A act : {A::Int8x2, A::Int11}) {
      auto whole = logitsOf(m, kTokens, 0, 1, act);
      if (act == A::Int8x2) {
        int8x2 = whole;
      } else {
        differing += whole != int8x2;
        if (!int11TakesEffect())
          EXPECT_EQ(whole, int8x2);
      }
      for (int64_t chunk : {3, 1}) {
        auto chunked = logitsOf(m, kTokens, chunk, 2, act);
        ASSERT_EQ(chunked.size(), whole.size());
        EXPECT_LT(relativeMaxError(chunked.data(), whole.data(), whole.size()),
                  act == A::Int8x2 ? 1e-4 : 1e-3)
            << "chunk " << chunk << " " << activationsName(act);
      }
    }
  }
  if (int11TakesEffect())
    EXPECT_GT(differing, 0) << "int11 changed no variant's prefill";
  std::printf("  int11 prefill differs from int8x2 in %d variants (%s)\n",
              differing, int11TakesEffect() ? "amx" : "no amx: none expected");
}

TEST(Quant, Metadata) {
  QuantModel model;
  QuantModel::Options o; // q4 g32 embedding (tied), q8 g128 q, q4 g64 affine
                         // k and v, q2 g32 o; i8 cache of 2 slots
  auto m = load(model.build(o, kernelsSo()));
  ASSERT_TRUE(m);
  using kernels::packedRowBytes;
  const int64_t H = QuantModel::kHidden, V = QuantModel::kVocab,
                KV = QuantModel::kKv;
  const int64_t embed = V * packedRowBytes(o.embed.format(), H);
  const int64_t q = H * packedRowBytes(o.q.format(), H);
  const int64_t kv = 2 * KV * packedRowBytes(o.kv.format(), H);
  const int64_t out = H * packedRowBytes(o.o.format(), H);
  EXPECT_EQ(embed, 48 * 72);
  EXPECT_EQ(q, 128 * 130);
  EXPECT_EQ(kv, 2 * 64 * 72);
  EXPECT_EQ(out, 128 * 40);
  EXPECT_EQ(m->weightBytes(), embed + q + kv + out + 2 * 4); // + 2 scales
  // Σ bytes * 8 / Σ elements over the projections (not the embedding
  // table, which is also the tied head): the table of qformat.h, weighted.
  const double elements = double(V * H + H * H + 2 * KV * H + H * H);
  const double projections = double(H * H + 2 * KV * H + H * H);
  const double bits = (H * H * kernels::bitsPerWeight(o.q.format()) +
                       2 * KV * H * kernels::bitsPerWeight(o.kv.format()) +
                       H * H * kernels::bitsPerWeight(o.o.format())) /
                      projections;
  EXPECT_NEAR(m->bitsPerWeight(), bits, 1e-12);
  EXPECT_NEAR(m->bitsPerWeight(), double(q + kv + out) * 8 / projections, 1e-12);
  {
    // Untied, the LM head counts.
    QuantModel::Options u = o;
    u.tied = false;
    auto untied = load(model.build(u, kernelsSo()));
    ASSERT_TRUE(untied);
    const int64_t lm = V * packedRowBytes(u.lm.format(), H);
    EXPECT_NEAR(untied->bitsPerWeight(),
                double(q + kv + out + lm) * 8 / (projections + V * H), 1e-12);
  }
  // The i8 cache: a quarter of the f32 one.
  EXPECT_EQ(m->kvBytesPerToken(), 2 * 2 * KV);
  ASSERT_EQ(m->caches().size(), 1u);
  EXPECT_EQ(m->caches()[0].dtype, "i8");
  EXPECT_EQ(m->caches()[0].elementBytes, 1);
  Opened i8 = open(model.build(o, kernelsSo()), 1);
  ASSERT_TRUE(i8.exec);
  EXPECT_EQ(i8.exec->cacheBytes(), uint64_t(2 * 2 * o.capacity * KV));

  o.int8Cache = false;
  o.floatWeights = true;
  auto f = load(model.build(o, kernelsSo()));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->bitsPerWeight(), 0.0);
  EXPECT_EQ(f->weightBytes(), 4 * int64_t(elements) + 2 * 4);
  EXPECT_EQ(f->kvBytesPerToken(), 4 * 2 * 2 * KV);
  EXPECT_EQ(f->caches()[0].dtype, "f32");
  EXPECT_EQ(f->caches()[0].elementBytes, 4);
  Opened f32 = open(model.build(o, kernelsSo()), 1);
  ASSERT_TRUE(f32.exec);
  EXPECT_EQ(f32.exec->cacheBytes(), 4 * i8.exec->cacheBytes());
}

// ---------------------------------------------------------------------------
// Moe with packed experts
// ---------------------------------------------------------------------------

// A Moe layer's weights: f32 masters, and their packed and dequantized
// forms. hidden 64, 4 experts of intermediate 64 (gate and up back to back),
// top-2, and a shared expert of intermediate 128.
struct MoeWeights {
  static constexpr int64_t K = 64, E = 4, I = 64, Is = 128, topK = 2;
  kernels::QuantFormat up{4, 32, QuantGrid::Balanced};
  kernels::QuantFormat down{8, 64, QuantGrid::Affine};
  kernels::QuantFormat shared{2, 64, QuantGrid::Balanced};
  std::vector<float> router, sharedExpertGate;
  // Per expert: gate|up [2I][K] (one tensor, two weights), down [K][I].
  std::vector<std::vector<float>> gateUp, downW;
  std::vector<float> sharedGate, sharedUp, sharedDown;

  explicit MoeWeights(uint32_t seed = 5) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n(0.0f, 1.0f);
    auto fill = [&](size_t count, float scale) {
      std::vector<float> v(count);
      for (float &x : v)
        x = scale * n(rng);
      return v;
    };
    router = fill(E * K, 0.3f);
    sharedExpertGate = fill(K, 0.2f);
    for (int64_t e = 0; e < E; ++e) {
      gateUp.push_back(fill(2 * I * K, 0.15f));
      downW.push_back(fill(K * I, 0.15f));
    }
    sharedGate = fill(Is * K, 0.1f);
    sharedUp = fill(Is * K, 0.1f);
    sharedDown = fill(K * Is, 0.1f);
  }

  static std::vector<uint8_t> pack(const std::vector<float> &w, int64_t N,
                                   int64_t K, kernels::QuantFormat f) {
    std::vector<uint8_t> out(N * kernels::packedRowBytes(f, K));
    kernels::quantizeRows(w.data(), N, K, f, out.data());
    return out;
  }
  static std::vector<float> dequant(const std::vector<float> &w, int64_t N,
                                    int64_t K, kernels::QuantFormat f) {
    return QuantModel::effective(w, N, K, {f.bits, f.group, f.grid});
  }
};

// The Moe kernel over the dequantized weights (f32).
void moeReference(const MoeWeights &mw, const float *x, int64_t M, float *y,
                  rt::ThreadPool *pool) {
  using W = MoeWeights;
  std::vector<std::vector<float>> gu, dn;
  std::vector<const void *> gate, up, down;
  for (int64_t e = 0; e < W::E; ++e) {
    gu.push_back(W::dequant(mw.gateUp[e], 2 * W::I, W::K, mw.up));
    dn.push_back(W::dequant(mw.downW[e], W::K, W::I, mw.down));
  }
  for (int64_t e = 0; e < W::E; ++e) {
    gate.push_back(gu[e].data());
    up.push_back(gu[e].data() + W::I * W::K);
    down.push_back(dn[e].data());
  }
  auto sg = W::dequant(mw.sharedGate, W::Is, W::K, mw.shared);
  auto su = W::dequant(mw.sharedUp, W::Is, W::K, mw.shared);
  auto sd = W::dequant(mw.sharedDown, W::K, W::Is, mw.shared);
  kernels::MoeArgs a;
  a.shape = {M, W::K, W::E, W::I, W::topK, W::Is};
  a.x = x;
  a.xStride = W::K;
  a.y = y;
  a.yStride = W::K;
  a.router = mw.router.data();
  a.gate = gate.data();
  a.up = up.data();
  a.down = down.data();
  a.sharedGate = sg.data();
  a.sharedUp = su.data();
  a.sharedDown = sd.data();
  a.sharedExpertGate = mw.sharedExpertGate.data();
  std::vector<float> scratch(kernels::moeScratchFloats(a.shape) + 16);
  kernels::moe(a, scratch.data(), pool);
}

TEST(QuantMoe, MatchesTheMoeKernel) {
  using W = MoeWeights;
  MoeWeights mw;
  // Packed forms; gate and up of an expert back to back in one buffer.
  std::vector<std::vector<uint8_t>> gu, dn;
  for (int64_t e = 0; e < W::E; ++e) {
    gu.push_back(W::pack(mw.gateUp[e], 2 * W::I, W::K, mw.up));
    dn.push_back(W::pack(mw.downW[e], W::K, W::I, mw.down));
  }
  auto sg = W::pack(mw.sharedGate, W::Is, W::K, mw.shared);
  auto su = W::pack(mw.sharedUp, W::Is, W::K, mw.shared);
  auto sd = W::pack(mw.sharedDown, W::K, W::Is, mw.shared);
  auto quant = [](const void *p, kernels::QuantFormat f) {
    rt::WeightRef r;
    r.data = p;
    r.kind = rt::WeightRef::Kind::Quant;
    r.format = f;
    return r;
  };
  auto f32 = [](const void *p) {
    rt::WeightRef r;
    r.data = p;
    return r;
  };
  std::vector<rt::WeightRef> gate, up, down;
  for (int64_t e = 0; e < W::E; ++e) {
    gate.push_back(quant(gu[e].data(), mw.up));
    up.push_back(quant(gu[e].data() + W::I * kernels::packedRowBytes(mw.up, W::K),
                       mw.up));
    down.push_back(quant(dn[e].data(), mw.down));
  }
  // The same over f32 weights (the dequantized values): what the Moe
  // kernel computes, bit for bit.
  std::vector<std::vector<float>> guF, dnF;
  std::vector<rt::WeightRef> gateF, upF, downF;
  for (int64_t e = 0; e < W::E; ++e) {
    guF.push_back(W::dequant(mw.gateUp[e], 2 * W::I, W::K, mw.up));
    dnF.push_back(W::dequant(mw.downW[e], W::K, W::I, mw.down));
  }
  for (int64_t e = 0; e < W::E; ++e) {
    gateF.push_back(f32(guF[e].data()));
    upF.push_back(f32(guF[e].data() + W::I * W::K));
    downF.push_back(f32(dnF[e].data()));
  }
  auto sgF = W::dequant(mw.sharedGate, W::Is, W::K, mw.shared);
  auto suF = W::dequant(mw.sharedUp, W::Is, W::K, mw.shared);
  auto sdF = W::dequant(mw.sharedDown, W::K, W::Is, mw.shared);

  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t M : {1, 5, 33}) {
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("M=" + std::to_string(M) + " threads=" + std::to_string(threads));
      rt::ThreadPool pool(threads);
      std::vector<float> x(M * W::K);
      for (float &v : x)
        v = u(rng);
      std::vector<float> want(M * W::K);
      moeReference(mw, x.data(), M, want.data(), &pool);

      rt::QuantMoeArgs a;
      a.shape = {M, W::K, W::E, W::I, W::topK, W::Is};
      a.x = x.data();
      a.xStride = W::K;
      a.yStride = W::K;
      a.router = f32(mw.router.data());
      a.sharedExpertGate = f32(mw.sharedExpertGate.data());
      std::vector<float> scratch(rt::quantMoeScratchFloats(a.shape) + 16);

      // f32 weights: the kernel's computation exactly.
      std::vector<float> yF(M * W::K, NAN);
      a.y = yF.data();
      a.gate = gateF.data();
      a.up = upF.data();
      a.down = downF.data();
      a.sharedGate = f32(sgF.data());
      a.sharedUp = f32(suF.data());
      a.sharedDown = f32(sdF.data());
      rt::quantMoe(a, scratch.data(), &pool);
      for (int64_t i = 0; i < M * W::K; ++i)
        ASSERT_EQ(yF[i], want[i]) << "f32 weights at " << i;

      // Packed weights, with accumulation: within the int8x2 activations'
      // error (the routing is the same: the router is f32).
      std::vector<float> y(M * W::K, 0.5f);
      a.y = y.data();
      a.accumulate = true;
      a.gate = gate.data();
      a.up = up.data();
      a.down = down.data();
      a.sharedGate = quant(sg.data(), mw.shared);
      a.sharedUp = quant(su.data(), mw.shared);
      a.sharedDown = quant(sd.data(), mw.shared);
      rt::quantMoe(a, scratch.data(), &pool);
      for (float &v : y)
        v -= 0.5f;
      // SwiGLU activations are heavy-tailed (max/rms large), so the
      // rounding of the down projection's input costs more than for typical
      // activations: measured ~6e-5 of max |y| with int8x2 (one int8 digit:
      // ~2e-2). A wrong format, grid or row pointer errs by O(1).
      const double err = relativeMaxError(y.data(), want.data(), y.size());
      EXPECT_LT(err, 1e-3);
      if (threads == 1)
        std::printf("  M=%lld: packed vs dequantized f32: %.2e of max |y|\n",
                    static_cast<long long>(M), err);

      // Gate and up in separate buffers (two calls) give what the stacked
      // call gives: each x row is rounded to int8 once per call alike.
      std::vector<std::vector<uint8_t>> apart;
      std::vector<rt::WeightRef> gateApart, upApart;
      const size_t half = W::I * kernels::packedRowBytes(mw.up, W::K);
      for (int64_t e = 0; e < W::E; ++e) {
        apart.emplace_back(gu[e].begin(), gu[e].begin() + half);
        apart.emplace_back(half + 64, 0); // not adjacent to the gate
        std::copy(gu[e].begin() + half, gu[e].end(), apart.back().begin() + 64);
      }
      for (int64_t e = 0; e < W::E; ++e) {
        gateApart.push_back(quant(apart[2 * e].data(), mw.up));
        upApart.push_back(quant(apart[2 * e + 1].data() + 64, mw.up));
      }
      std::vector<float> y2(M * W::K, 0.5f);
      a.y = y2.data();
      a.gate = gateApart.data();
      a.up = upApart.data();
      rt::quantMoe(a, scratch.data(), &pool);
      for (float &v : y2)
        v -= 0.5f;
      for (int64_t i = 0; i < M * W::K; ++i)
        ASSERT_NEAR(y2[i], y[i], 1e-6 * (1.0 + std::fabs(y[i])))
            << "gate and up apart, at " << i;
    }
  }
}

// The Moe command with packed experts through the executor: Embed (f32) →
// Moe → MatMul (f32 LM head).
TEST(QuantMoe, MoeCommand) {
  using W = MoeWeights;
  MoeWeights mw;
  const uint32_t vocab = 8;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> embed(vocab * W::K), lm(vocab * W::K);
  for (float &v : embed)
    v = u(rng);
  for (float &v : lm)
    v = 0.2f * u(rng);
  const uint32_t R = 4;
  auto build = [&](bool withShared) {
    ArtifactBuilder b;
    b.vocab = vocab;
    b.hidden = W::K;
    const uint32_t E = b.addWeight("model.embed_tokens.weight", {vocab, W::K}, embed);
    const uint32_t L = b.addWeight("lm_head.weight", {vocab, W::K}, lm);
    const uint32_t router = b.addWeight("mlp.gate.weight", {W::E, W::K}, mw.router);
    std::vector<uint32_t> gate, up, down;
    for (int64_t e = 0; e < W::E; ++e) {
      const std::string x = "mlp.experts." + std::to_string(e) + ".";
      std::vector<float> g(mw.gateUp[e].begin(), mw.gateUp[e].begin() + W::I * W::K);
      std::vector<float> v(mw.gateUp[e].begin() + W::I * W::K, mw.gateUp[e].end());
      gate.push_back(b.addQuantWeight(x + "gate_proj.weight", W::I, W::K, g, mw.up));
      // up continues gate in the data section (packed rows are 64-aligned
      // here: 64 rows of 36 bytes).
      up.push_back(b.addQuantWeight(x + "up_proj.weight", W::I, W::K, v, mw.up));
      down.push_back(b.addQuantWeight(x + "down_proj.weight", W::K, W::I,
                                      mw.downW[e], mw.down));
    }
    SharedExpert shared;
    if (withShared) {
      shared.gate = int32_t(b.addQuantWeight("mlp.shared_expert.gate_proj.weight",
                                             W::Is, W::K, mw.sharedGate, mw.shared));
      shared.up = int32_t(b.addQuantWeight("mlp.shared_expert.up_proj.weight",
                                           W::Is, W::K, mw.sharedUp, mw.shared));
      shared.down = int32_t(b.addQuantWeight("mlp.shared_expert.down_proj.weight",
                                             W::K, W::Is, mw.sharedDown, mw.shared));
      shared.expertGate = int32_t(b.addWeight("mlp.shared_expert_gate.weight",
                                              {1, W::K}, mw.sharedExpertGate));
    }
    // x at 0 (stride 80: strided rows), y at 80R, logits at 160R.
    std::vector<ArtifactBuilder::Cmd> cmds = {
        b.embed(E, buf(0, 80, W::K), "model.embed_tokens"),
        b.moe(buf(0, 80, W::K), buf(80 * R, W::K, W::K), router, gate, up, down,
              W::topK, true, false, shared, "model.layers.0.mlp"),
        b.matmul(buf(80 * R, W::K, W::K), {L}, buf(160 * R, vocab, vocab), W::K,
                 vocab, false, "lm_head")};
    b.addProgram("prefill", R, 160 * R + vocab * R, buf(160 * R, vocab, vocab),
                 false, cmds);
    return b.finish();
  };
  const std::vector<int32_t> tokens = {1, 7, 3, 3, 0, 5};
  for (bool withShared : {false, true}) {
    SCOPED_TRACE(withShared ? "shared expert" : "no shared expert");
    auto m = load(build(withShared));
    ASSERT_TRUE(m);
    for (int threads : {1, 2}) {
      auto got = logitsOf(m, tokens, 0, threads);
      // Reference: the Moe kernel over dequantized weights, then the head.
      MoeWeights ref = mw;
      if (!withShared) {
        // A shared expert of zero weights adds sigmoid(·) · 0.
        std::fill(ref.sharedDown.begin(), ref.sharedDown.end(), 0.0f);
      }
      std::vector<float> x(tokens.size() * W::K), y(tokens.size() * W::K);
      for (size_t t = 0; t < tokens.size(); ++t)
        std::copy_n(&embed[tokens[t] * W::K], W::K, &x[t * W::K]);
      moeReference(ref, x.data(), int64_t(tokens.size()), y.data(), nullptr);
      std::vector<float> want(tokens.size() * vocab);
      for (size_t t = 0; t < tokens.size(); ++t)
        QuantModel::linear(lm, &y[t * W::K], vocab, W::K, &want[t * vocab]);
      ASSERT_EQ(got.size(), want.size());
      // As QuantMoe.MatchesTheMoeKernel.
      EXPECT_LT(relativeMaxError(got.data(), want.data(), want.size()), 4e-2);
      // The experts ran as GEMMs over their Panel16 copies (gate and up as
      // one), all that the load counted.
      EXPECT_GT(m->prefillCopyBytes(), 0u);
      EXPECT_EQ(m->prefillCopiesMade(), m->prefillCopyBytes());
    }
  }
}

} // namespace
} // namespace fm::test
