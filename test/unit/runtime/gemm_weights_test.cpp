// Prefill as a GEMM on the CPU device: the Panel16 copies (GemmWeights) are
// made once per weight and hold exactly repackForGemm's bytes, and a matmul
// kernel prepared for several rows multiplies packed weights by them within
// the qmatmul error bound of the plain double-precision reference, for two
// weights fused into one call and for a strided y; a session makes them only
// when a program that needs them first runs, and the memory bound a load
// checks counts them.
#include "PackedWeights.h"
#include "QuantModel.h"
#include "fm/runtime.h"
#include "fm/sampler.h"
#include "hal/cpu/CpuDevice.h"
#include "kernels/qgemm.h"
#include "base/ThreadPool.h"
#include "kernels/qmatmul_problem.h"

#include <gtest/gtest.h>

#include <cmath>
#include <chrono>
#include <cstring>
#include <vector>

namespace fm::test {
namespace {

using kernels::GemmLayout;
using kernels::QActivations;
using kernels::QuantFormat;
using kernels::QuantGrid;
using kernels::testing::QMatmulProblem;

TEST(GemmWeights, OneCopyPerWeightWithRepackForGemmBytes) {
  for (QuantFormat f : {QuantFormat{2, 32, QuantGrid::Balanced},
                        QuantFormat{4, 64, QuantGrid::Affine},
                        QuantFormat{8, 128, QuantGrid::Balanced}}) {
    // 300 rows: 19 panels (the last one partial), split across the pool's
    // two threads: one hand-off to the workers, none for a copy already
    // made.
    const QMatmulProblem p(f, 1, 256, 300, 11);
    hal::GemmWeights copies;
    rt::ThreadPool pool(2);
    const uint64_t dispatches = pool.dispatches();
    auto a = copies.panel16(p.w.data(), f, p.N, p.K, &pool);
    ASSERT_TRUE(a);
    EXPECT_EQ(pool.dispatches(), dispatches + 1);
    EXPECT_GT(copies.repackSeconds(), 0.0);
    const std::vector<uint8_t> want =
        kernels::repackForGemm(GemmLayout::Panel16, f, p.N, p.K, p.w.data());
    ASSERT_EQ(a->size(), want.size());
    EXPECT_EQ(std::memcmp(a->data(), want.data(), want.size()), 0);
    EXPECT_EQ(copies.panel16(p.w.data(), f, p.N, p.K, &pool), a) << "one copy";
    EXPECT_EQ(pool.dispatches(), dispatches + 1);
    EXPECT_EQ(copies.bytes(), want.size());
    // The first 16 rows alone are another weight (without a pool: on the
    // calling thread).
    auto b = copies.panel16(p.w.data(), f, 16, p.K, nullptr);
    ASSERT_TRUE(b);
    EXPECT_NE(b, a);
    EXPECT_EQ(copies.bytes(), want.size() + b->size());
    const std::vector<uint8_t> wantB =
        kernels::repackForGemm(GemmLayout::Panel16, f, 16, p.K, p.w.data());
    ASSERT_EQ(b->size(), wantB.size());
    EXPECT_EQ(std::memcmp(b->data(), wantB.data(), wantB.size()), 0);
  }
}

TEST(GemmWeights, WeightsThatCannotBeRepackedGetNone) {
  hal::GemmWeights copies;
  const uint8_t bytes[64] = {};
  // K = 48 is not a multiple of the group 32.
  EXPECT_FALSE(
      copies.panel16(bytes, {4, 32, QuantGrid::Balanced}, 2, 48, nullptr));
  EXPECT_FALSE(
      copies.panel16(bytes, {3, 32, QuantGrid::Balanced}, 2, 64, nullptr));
  EXPECT_EQ(copies.bytes(), 0u);
}

// y = x · [w0; w1]ᵀ through the CPU device's matmul kernel: the two weights
// lie back to back (one fused call) or apart (two calls), y dense or wider
// than the outputs.
TEST(GemmWeights, MatmulKernelForSeveralRowsMatchesTheReference) {
  const QuantFormat f{4, 32, QuantGrid::Balanced};
  const int64_t K = 192, N0 = 40, N1 = 24, N = N0 + N1, M = 9;
  // Both weights as one problem: rows [0, N0) are w0, the rest w1.
  const QMatmulProblem p(f, M, K, N, 23);
  for (bool apart : {false, true})
    for (int64_t yStride : {N, N + 8})
      for (int64_t maxRows : {int64_t(1), M}) {
        SCOPED_TRACE(std::string(apart ? "apart" : "fused") + " y stride " +
                     std::to_string(yStride) + " max rows " +
                     std::to_string(maxRows));
        hal::CpuDevice device;
        // The weights' bytes, w1 after a gap of 128 bytes when apart.
        const size_t gap = apart ? 128 : 0;
        const std::vector<uint8_t> data = splitPackedRows(p.w, f, K, N0, gap);
        auto weights = device.importWeights(data.data(), data.size());
        ASSERT_TRUE(weights.isOk());
        auto arena = device.allocate(4 * (M * K + M * yStride),
                                     hal::MemorySpace::Host);
        ASSERT_TRUE(arena.isOk());
        std::memcpy((*arena)->host(), p.x.data(), 4 * M * K);

        hal::MatmulDesc d;
        d.x = {arena->get(), 0, K, K};
        d.y = {arena->get(), uint64_t(4 * M * K), yStride, N};
        d.k = K;
        d.n = N;
        d.maxRows = maxRows;
        d.activations = QActivations::Int8x2;
        addSplitWeights(d, weights->get(), f, K, N0, N1, gap);
        auto kernel = device.prepareMatmul(d);
        ASSERT_TRUE(kernel.isOk()) << kernel.message();
        EXPECT_EQ(device.gemmWeights().bytes(), 0u) << "copies before a run";
        hal::QueueOptions qo;
        qo.threads = 2;
        qo.scratchBytes = (*kernel)->scratchBytes();
        auto queue = device.createQueue(qo);
        ASSERT_TRUE(queue.isOk());
        ASSERT_TRUE((*kernel)->beforeFirstRun(**queue).isOk());
        // Only kernels for several rows make copies: the whole fused weight,
        // or each of the two.
        const uint64_t copied = device.gemmWeights().bytes();
        if (maxRows == 1)
          EXPECT_EQ(copied, 0u);
        else
          EXPECT_EQ(copied,
                    apart ? kernels::gemmPackedBytes(GemmLayout::Panel16, f, N0, K) +
                                kernels::gemmPackedBytes(GemmLayout::Panel16, f, N1, K)
                          : kernels::gemmPackedBytes(GemmLayout::Panel16, f, N, K));
        hal::Launch l;
        l.rows = maxRows;
        ASSERT_TRUE((*kernel)->run(**queue, l).isOk());
        const float *y =
            reinterpret_cast<const float *>((*arena)->host() + 4 * M * K);
        for (int64_t r = 0; r < maxRows; ++r)
          for (int64_t c = 0; c < N; ++c) {
            const int64_t i = r * N + c;
            ASSERT_LE(std::fabs(double(y[r * yStride + c]) - p.ref[i]),
                      p.tolerance(i, QActivations::Int8x2))
                << "row " << r << " column " << c;
          }
      }
}

// The matmul kernel over weights that come with their Panel16 copies in the
// artifact (WeightDesc::beside): it makes none and matches the reference,
// whether the two parts' copies continue each other (48 rows: whole panels,
// one call) or not (40: two calls); a copy of the wrong size is an error
// that names its weight.
TEST(GemmWeights, MatmulKernelReadsTheArtifactsCopies) {
  const QuantFormat f{4, 32, QuantGrid::Balanced};
  const int64_t K = 192, N1 = 24, M = 9;
  for (int64_t N0 : {48, 40}) {
    SCOPED_TRACE("first part " + std::to_string(N0) + " rows");
    const int64_t N = N0 + N1;
    const QMatmulProblem p(f, M, K, N, 29);
    const size_t rowBytes = kernels::packedRowBytes(f, K);
    std::vector<uint8_t> data = p.w;
    data.resize((data.size() + 63) & ~size_t(63));
    uint64_t copyAt[2];
    for (int i = 0; i < 2; ++i) {
      const int64_t rows = i == 0 ? N0 : N1;
      const std::vector<uint8_t> copy = kernels::repackForGemm(
          GemmLayout::Panel16, f, rows, K, p.w.data() + (i == 0 ? 0 : N0 * rowBytes));
      copyAt[i] = data.size();
      data.insert(data.end(), copy.begin(), copy.end());
    }
    hal::CpuDevice device;
    auto weights = device.importWeights(data.data(), data.size());
    ASSERT_TRUE(weights.isOk());
    auto arena = device.allocate(4 * (M * K + M * N), hal::MemorySpace::Host);
    ASSERT_TRUE(arena.isOk());
    std::memcpy((*arena)->host(), p.x.data(), 4 * M * K);
    hal::MatmulDesc d;
    d.x = {arena->get(), 0, K, K};
    d.y = {arena->get(), uint64_t(4 * M * K), N, N};
    d.k = K;
    d.n = N;
    d.maxRows = M;
    d.activations = QActivations::Int8x2;
    addSplitWeights(d, weights->get(), f, K, N0, N1, 0);
    for (int i = 0; i < 2; ++i) {
      d.weights[i].name = i == 0 ? "w0" : "w1";
      d.weights[i].beside.layout = kernels::kPanel16LayoutName;
      d.weights[i].beside.offset = copyAt[i];
      d.weights[i].beside.bytes = kernels::gemmPackedBytes(
          GemmLayout::Panel16, f, d.weights[i].shape[0], K);
    }
    EXPECT_EQ(copyAt[0] + d.weights[0].beside.bytes == copyAt[1], true);
    auto kernel = device.prepareMatmul(d);
    ASSERT_TRUE(kernel.isOk()) << kernel.message();
    hal::QueueOptions qo;
    qo.threads = 2;
    qo.scratchBytes = (*kernel)->scratchBytes();
    auto queue = device.createQueue(qo);
    ASSERT_TRUE(queue.isOk());
    ASSERT_TRUE((*kernel)->beforeFirstRun(**queue).isOk());
    EXPECT_EQ(device.gemmWeights().bytes(), 0u) << "a copy was made";
    hal::Launch l;
    l.rows = M;
    ASSERT_TRUE((*kernel)->run(**queue, l).isOk());
    const float *y = reinterpret_cast<const float *>((*arena)->host() + 4 * M * K);
    for (int64_t i = 0; i < M * N; ++i)
      ASSERT_LE(std::fabs(double(y[i]) - p.ref[i]),
                p.tolerance(i, QActivations::Int8x2))
          << "row " << i / N << " column " << i % N;

    hal::MatmulDesc bad = d;
    bad.weights[1].beside.bytes -= 64;
    auto refused = device.prepareMatmul(bad);
    ASSERT_FALSE(refused.isOk());
    EXPECT_EQ(refused.message(),
              "cpu: weight 'w1': its panel16 copy is " +
                  std::to_string(bad.weights[1].beside.bytes) + " bytes, not the " +
                  std::to_string(d.weights[1].beside.bytes) +
                  " of 24 x 192 weights at 4 bits");
  }
}

const std::vector<uint8_t> &kernelsSo() {
  static const std::vector<uint8_t> image = readFile(FM_TEST_KERNELS_SO);
  return image;
}

// QuantModel's packed weights that its prefill program multiplies by
// several rows (Q; K and V; O; the tied LM head, the embedding table), one
// Panel16 copy each, computed here from the formats QuantModel states.
uint64_t quantModelCopyBytes(const QuantModel::Options &o) {
  auto bytes = [](QuantModel::Storage s, int64_t N, int64_t K) {
    return uint64_t(kernels::gemmPackedBytes(GemmLayout::Panel16, s.format(), N, K));
  };
  const int64_t H = QuantModel::kHidden, KV = QuantModel::kKv;
  return bytes(o.q, H, H) + 2 * bytes(o.kv, KV, H) + bytes(o.o, H, H) +
         bytes(o.embed, QuantModel::kVocab, H);
}

TEST(GemmWeights, ASessionCopiesOnlyForTheProgramsItRuns) {
  QuantModel qm;
  const QuantModel::Options o;
  const std::vector<uint8_t> file = qm.build(o, kernelsSo());
  auto model = Model::loadFromBuffer(file.data(), file.size(), "q.fmb");
  ASSERT_TRUE(model.isOk()) << model.message();
  const uint64_t want = quantModelCopyBytes(o);
  EXPECT_EQ((*model)->prefillCopyBytes(), want);
  SessionOptions so;
  so.threads = 1;
  Session s(*model, so);
  ASSERT_TRUE(s.status().isOk()) << s.status().message();
  EXPECT_EQ((*model)->prefillCopiesMade(), 0u) << "a session copies nothing";
  // Decoding token by token runs the decode program alone: no copies.
  const std::vector<int32_t> tokens = {3, 1, 4, 1, 5, 9, 2};
  auto one = s.prefill(tokens, false, /*chunk=*/1);
  ASSERT_TRUE(one.isOk()) << one.message();
  EXPECT_EQ((*model)->prefillCopiesMade(), 0u) << "decode made copies";
  ASSERT_TRUE(s.reset().isOk());
  const double before = s.stats().firstRunMs;
  auto many = s.prefill(tokens);
  ASSERT_TRUE(many.isOk()) << many.message();
  EXPECT_EQ((*model)->prefillCopiesMade(), want);
  // The repack is timed apart (SessionStats::firstRunMs), once.
  const double repack = s.stats().firstRunMs;
  EXPECT_GT(repack, before);
  ASSERT_TRUE(s.reset().isOk());
  ASSERT_TRUE(s.prefill(tokens).isOk());
  EXPECT_EQ(s.stats().firstRunMs, repack) << "a second run prepared again";
  // A second session shares them.
  Session t(*model, so);
  ASSERT_TRUE(t.prefill(tokens).isOk());
  EXPECT_EQ((*model)->prefillCopiesMade(), want);
  // With f32 activations prefill keeps the row kernel: no copies.
  auto other = Model::loadFromBuffer(file.data(), file.size(), "q.fmb");
  ASSERT_TRUE(other.isOk());
  SessionOptions exact = so;
  exact.activations = SessionOptions::Activations::F32;
  Session e(*other, exact);
  ASSERT_TRUE(e.prefill(tokens).isOk());
  EXPECT_EQ((*other)->prefillCopiesMade(), 0u);
}

// The copies fmc compile writes into the artifact (QuantModel's gemmCopies:
// Q, K, V and O, K's and V's back to back): prefill reads them in place, so
// a session copies only the weight without one (the tied table), the memory
// bound counts only that, and the logits are those of the copies made at
// run time, bit for bit. Copies of zeros change them: they are read.
TEST(GemmWeights, TheArtifactsCopiesAreReadInPlace) {
  QuantModel qm;
  QuantModel::Options o;
  // More rows than the matvec takes (kernels/isa.h kMatvecMaxRows): qgemm.
  o.maxRows = 16;
  const std::vector<uint8_t> plain = qm.build(o, kernelsSo());
  o.gemmCopies = true;
  const std::vector<uint8_t> copies = qm.build(o, kernelsSo());
  o.zeroGemmCopies = true;
  const std::vector<uint8_t> zeros = qm.build(o, kernelsSo());
  const uint64_t table = kernels::gemmPackedBytes(
      GemmLayout::Panel16, o.embed.format(), QuantModel::kVocab, QuantModel::kHidden);
  const std::vector<int32_t> tokens = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
  struct Run {
    std::vector<float> logits;
    uint64_t bound = 0, made = 0;
  };
  auto run = [&](const std::vector<uint8_t> &file, bool allLogits) {
    Run r;
    auto model = Model::loadFromBuffer(file.data(), file.size(), "q.fmb");
    EXPECT_TRUE(model.isOk()) << model.message();
    if (!model.isOk())
      return r;
    SessionOptions so;
    so.threads = 2;
    Session s(*model, so);
    auto l = s.prefill(tokens, allLogits);
    EXPECT_TRUE(l.isOk()) << l.message();
    if (l.isOk())
      r.logits.assign(l->data, l->data + l->rows * l->vocab);
    r.bound = (*model)->prefillCopyBytes();
    r.made = (*model)->prefillCopiesMade();
    return r;
  };
  for (bool allLogits : {false, true}) {
    SCOPED_TRACE(allLogits ? "every row's logits" : "the last row's");
    const Run a = run(plain, allLogits), b = run(copies, allLogits),
              z = run(zeros, allLogits);
    EXPECT_EQ(a.bound, quantModelCopyBytes(QuantModel::Options{}));
    EXPECT_EQ(b.bound, table) << "the memory bound counts mapped copies";
    EXPECT_EQ(b.made, table) << "only the tied table is repacked";
    ASSERT_FALSE(a.logits.empty());
    EXPECT_EQ(a.logits, b.logits);
    EXPECT_NE(a.logits, z.logits) << "the artifact's copies are not read";
  }
}

// generate() (fm-run --prompt, --chat) times the first prefill's repack
// apart: Generation::firstRunMs is the session's firstRunMs growth during
// the prefill, and prefillMs is without it.
TEST(GemmWeights, GenerateTimesTheRepackApartFromPrefill) {
  QuantModel qm;
  QuantModel::Options o;
  // Ids 0..28: <unk> <s> </s> and a..z (the model's 48 ids: the rest have
  // no text and are never sampled).
  std::string vocab = R"("<unk>": 0, "<s>": 1, "</s>": 2)";
  for (int c = 0; c < 26; ++c)
    vocab += ", \"" + std::string(1, char('a' + c)) + "\": " + std::to_string(3 + c);
  o.tokenizerJson = R"({"added_tokens": [
      {"id": 0, "content": "<unk>", "special": true},
      {"id": 1, "content": "<s>", "special": true},
      {"id": 2, "content": "</s>", "special": true}],
    "model": {"type": "BPE", "unk_token": "<unk>", "vocab": {)" +
                    vocab + R"(}, "merges": []}})";
  o.tokenizerConfig = R"({"bos_token": "<s>", "eos_token": "</s>"})";
  const std::vector<uint8_t> file = qm.build(o, kernelsSo());
  auto model = Model::loadFromBuffer(file.data(), file.size(), "q.fmb");
  ASSERT_TRUE(model.isOk()) << model.message();
  SessionOptions so;
  so.threads = 1;
  Session s(*model, so);
  ASSERT_TRUE(s.status().isOk()) << s.status().message();
  Sampler greedy(0.0f, 0, 1.0f, 1);
  GenerateOptions go;
  go.maxNewTokens = 2;
  const std::vector<int32_t> prompt = {1, 5, 9, 12, 7, 3};
  const auto t0 = std::chrono::steady_clock::now();
  auto first = s.generateText(prompt, greedy, go);
  const double wallMs = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
  ASSERT_TRUE(first.isOk()) << first.message();
  EXPECT_EQ((*model)->prefillCopiesMade(), quantModelCopyBytes(o));
  EXPECT_GT(first->firstRunMs, 0.0);
  // (The decode program's first run adds its own, copy-less, preparation.)
  EXPECT_LE(first->firstRunMs, s.stats().firstRunMs);
  EXPECT_GE(first->prefillMs, 0.0);
  // Wall time holds the prefill, the repack and the decode steps once each
  // (with prefillMs the wall time of the prefill, the sum is larger by
  // the repack).
  EXPECT_LE(first->prefillMs + first->firstRunMs + first->decodeMs, wallMs);
  // The next prompt finds the copies made: no repack.
  ASSERT_TRUE(s.reset().isOk());
  auto second = s.generateText(prompt, greedy, go);
  ASSERT_TRUE(second.isOk()) << second.message();
  EXPECT_EQ(second->firstRunMs, 0.0);
  EXPECT_EQ(second->tokens, first->tokens);
}

TEST(GemmWeights, TheMemoryBoundCountsTheCopies) {
  QuantModel qm;
  const QuantModel::Options o;
  const std::vector<uint8_t> file = qm.build(o, kernelsSo());
  auto model = Model::loadFromBuffer(file.data(), file.size(), "q.fmb");
  ASSERT_TRUE(model.isOk()) << model.message();
  const uint64_t need = (*model)->sessionBytes();
  const uint64_t copies = (*model)->prefillCopyBytes();
  ASSERT_GT(copies, 0u);
  LoadOptions lo;
  lo.maxMemoryBytes = need;
  EXPECT_TRUE(Model::loadFromBuffer(file.data(), file.size(), "q.fmb", lo).isOk());
  // Enough for the caches and the arena, not for the copies too.
  lo.maxMemoryBytes = need - copies;
  auto refused = Model::loadFromBuffer(file.data(), file.size(), "q.fmb", lo);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.message().find("q.fmb: a session needs"), std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("more than the limit"), std::string::npos)
      << refused.message();
  // The same model without a program of several rows makes no copies.
  QuantModel::Options decodeOnly;
  decodeOnly.withPrefill = false;
  const std::vector<uint8_t> small = qm.build(decodeOnly, kernelsSo());
  auto d = Model::loadFromBuffer(small.data(), small.size(), "d.fmb");
  ASSERT_TRUE(d.isOk()) << d.message();
  EXPECT_EQ((*d)->prefillCopyBytes(), 0u);
}

} // namespace
} // namespace fm::test
