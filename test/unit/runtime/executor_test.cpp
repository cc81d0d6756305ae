// Executor and Session tests: a hand-built one-layer model against a plain
// C++ reference, chunking, decode path, generation, dispatch of generated
// code, and the run-time errors.
#include "ArtifactBuilder.h"
#include "LoadedArtifact.h"
#include "TinyModel.h"
#include "fm/runtime.h"
#include "fm/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <elf.h>
#include <unistd.h>

namespace fm::test {
namespace {

const std::vector<uint8_t> &kernelsSo() {
  static const std::vector<uint8_t> image = readFile(FM_TEST_KERNELS_SO);
  return image;
}

std::shared_ptr<Model> load(const std::vector<uint8_t> &file,
                            const LoadOptions &options = {}) {
  auto model = Model::loadFromBuffer(file.data(), file.size(), "tiny.fmb", options);
  EXPECT_TRUE(model.isOk()) << model.message();
  return model ? *model : nullptr;
}

void expectNear(const float *got, const float *want, size_t n,
                const std::string &what) {
  for (size_t i = 0; i < n; ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4f + 1e-4f * std::fabs(want[i]))
        << what << " at " << i;
}

const std::vector<int32_t> kTokens = {3, 17, 0, 39, 5, 5, 22, 11, 8, 1, 30, 2, 14};

struct Variant {
  const char *name;
  TinyModel::Options options;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  TinyModel::Options o;
  v.push_back({"fused", o});
  o.gapAfterWq = true;
  v.push_back({"fused-gap", o});
  o = {};
  o.fusedQkv = false;
  v.push_back({"split", o});
  o.attnStride = 20;
  v.push_back({"split-strided-attn", o});
  o = {};
  o.window = 3;
  v.push_back({"window", o});
  return v;
}

TEST(Executor, PrefillMatchesReference) {
  TinyModel tiny;
  for (const Variant &v : variants()) {
    SCOPED_TRACE(v.name);
    auto model = load(tiny.build(v.options, kernelsSo()));
    ASSERT_TRUE(model);
    std::vector<float> want = tiny.reference(kTokens, v.options.window);
    for (int threads : {1, 2}) {
      Session session(model, SessionOptions{threads});
      ASSERT_TRUE(session.status().isOk()) << session.status().message();
      auto logits = session.prefill(kTokens, /*allLogits=*/true);
      ASSERT_TRUE(logits.isOk()) << logits.message();
      ASSERT_EQ(logits->rows, int64_t(kTokens.size()));
      ASSERT_EQ(logits->vocab, TinyModel::kVocab);
      expectNear(logits->data, want.data(), want.size(), v.name);
      EXPECT_EQ(session.position(), int64_t(kTokens.size()));
    }
  }
}

TEST(Executor, ChunkedPrefillEqualsWholeEqualsDecodePath) {
  TinyModel tiny;
  for (const Variant &v : variants()) {
    SCOPED_TRACE(v.name);
    TinyModel::Options o = v.options;
    o.maxRows = 16; // the whole prompt in one call
    auto model = load(tiny.build(o, kernelsSo()));
    ASSERT_TRUE(model);
    Session session(model, SessionOptions{1});
    auto whole = session.prefill(kTokens, true, 0);
    ASSERT_TRUE(whole.isOk()) << whole.message();
    std::vector<float> wholeCopy(whole->data, whole->data + whole->rows * whole->vocab);
    for (int64_t chunk : {1, 2, 3, 5, 16, 100}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk));
      ASSERT_TRUE(session.reset().isOk());
      auto got = session.prefill(kTokens, true, chunk);
      ASSERT_TRUE(got.isOk()) << got.message();
      expectNear(got->data, wholeCopy.data(), wholeCopy.size(), "all rows");
      // Only the last row, through prefill_last (chunk 1: decode).
      ASSERT_TRUE(session.reset().isOk());
      auto last = session.prefill(kTokens, false, chunk);
      ASSERT_TRUE(last.isOk()) << last.message();
      ASSERT_EQ(last->rows, 1);
      expectNear(last->data, wholeCopy.data() + (kTokens.size() - 1) * TinyModel::kVocab,
                 TinyModel::kVocab, "last row");
    }
  }
}

TEST(Executor, PrefillThenDecodeContinuesTheSequence) {
  TinyModel tiny;
  auto model = load(tiny.build({}, kernelsSo()));
  ASSERT_TRUE(model);
  std::vector<float> want = tiny.reference(kTokens);
  Session session(model, SessionOptions{2});
  const size_t split = 5;
  auto first = session.prefill(kTokens.data(), split);
  ASSERT_TRUE(first.isOk()) << first.message();
  expectNear(first->last(), want.data() + (split - 1) * TinyModel::kVocab,
             TinyModel::kVocab, "prefill");
  for (size_t t = split; t < kTokens.size(); ++t) {
    auto logits = session.decode(kTokens[t]);
    ASSERT_TRUE(logits.isOk()) << logits.message();
    expectNear(*logits, want.data() + t * TinyModel::kVocab, TinyModel::kVocab,
               "decode " + std::to_string(t));
  }
  EXPECT_EQ(session.position(), int64_t(kTokens.size()));
}

TEST(Executor, ModelWithoutPrefillProgramsUsesDecode) {
  TinyModel tiny;
  TinyModel::Options o;
  o.withPrefill = o.withPrefillLast = false;
  auto model = load(tiny.build(o, kernelsSo()));
  ASSERT_TRUE(model);
  Session session(model, SessionOptions{1});
  auto got = session.prefill(kTokens, true);
  ASSERT_TRUE(got.isOk()) << got.message();
  std::vector<float> want = tiny.reference(kTokens);
  expectNear(got->data, want.data(), want.size(), "all rows");
}

TEST(Executor, GenerateIsGreedyArgmax) {
  TinyModel tiny;
  auto model = load(tiny.build({}, kernelsSo()));
  ASSERT_TRUE(model);
  Session session(model, SessionOptions{1});
  Sampler greedy(0.0f, 0, 1.0f, 0);
  std::vector<int32_t> seen;
  auto out = session.generate({1, 2, 3}, 6, greedy, [&](int32_t t) {
    seen.push_back(t);
    return true;
  });
  ASSERT_TRUE(out.isOk()) << out.message();
  ASSERT_EQ(out->size(), 6u);
  EXPECT_EQ(seen, *out);
  // The last token is not fed back.
  EXPECT_EQ(session.position(), 3 + 5);

  // Each token is the argmax of the reference logits of the sequence so far.
  std::vector<int32_t> seq = {1, 2, 3};
  for (int32_t token : *out) {
    std::vector<float> ref = tiny.reference(seq);
    const float *last = ref.data() + (seq.size() - 1) * TinyModel::kVocab;
    int32_t best = 0;
    for (int32_t t = 1; t < int32_t(TinyModel::kVocab); ++t)
      if (last[t] > last[best])
        best = t;
    EXPECT_EQ(token, best);
    seq.push_back(token);
  }

  // The callback stops generation.
  ASSERT_TRUE(session.reset().isOk());
  auto stopped = session.generate({1, 2, 3}, 6, greedy, [](int32_t) { return false; });
  ASSERT_TRUE(stopped.isOk());
  EXPECT_EQ(stopped->size(), 1u);
}

TEST(Executor, ResetStartsOver) {
  TinyModel tiny;
  auto model = load(tiny.build({}, kernelsSo()));
  ASSERT_TRUE(model);
  Session session(model, SessionOptions{1});
  auto a = session.prefill(kTokens, false);
  ASSERT_TRUE(a.isOk());
  std::vector<float> first(a->data, a->data + TinyModel::kVocab);
  ASSERT_TRUE(session.reset().isOk());
  EXPECT_EQ(session.position(), 0);
  auto b = session.prefill(kTokens, false);
  ASSERT_TRUE(b.isOk());
  expectNear(b->data, first.data(), first.size(), "after reset");
}

TEST(Executor, TokenOutOfVocabulary) {
  TinyModel tiny;
  auto model = load(tiny.build({}, kernelsSo()));
  ASSERT_TRUE(model);
  Session session(model, SessionOptions{1});
  auto bad = session.prefill(std::vector<int32_t>{1, 2, 40, 3});
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.message(), "tiny.fmb: token 40 at index 2 is out of range (vocab 40)");
  EXPECT_EQ(session.position(), 0); // nothing ran
  auto neg = session.decode(-1);
  ASSERT_FALSE(neg.isOk());
  EXPECT_EQ(neg.message(), "tiny.fmb: token -1 is out of range (vocab 40)");
}

TEST(Executor, ContextFull) {
  TinyModel tiny;
  TinyModel::Options o;
  o.capacity = 16;
  auto model = load(tiny.build(o, kernelsSo()));
  ASSERT_TRUE(model);
  EXPECT_EQ(model->contextLength(), 16);
  Session session(model, SessionOptions{1});
  ASSERT_TRUE(session.prefill(kTokens).isOk()); // 13 tokens
  auto over = session.prefill(std::vector<int32_t>{1, 2, 3, 4});
  ASSERT_FALSE(over.isOk());
  EXPECT_EQ(over.message(),
            "tiny.fmb: 4 tokens at position 13 do not fit in the context of 16 tokens");
  ASSERT_TRUE(session.decode(1).isOk());
  ASSERT_TRUE(session.decode(1).isOk());
  ASSERT_TRUE(session.decode(1).isOk());
  auto full = session.decode(1);
  ASSERT_FALSE(full.isOk());
  EXPECT_EQ(full.message(),
            "tiny.fmb: 1 token at position 16 do not fit in the context of 16 tokens");
}

TEST(Executor, RowsAndPositionsChecked) {
  TinyModel tiny;
  auto file = tiny.build({}, kernelsSo());
  LoadedArtifact loaded;
  ASSERT_TRUE(loaded.load(file, "tiny.fmb", /*withExecutable=*/false));
  auto exec = loaded.executor(1);
  ASSERT_TRUE(exec.isOk()) << exec.message();
  int prefill = (*exec)->findProgram("prefill");
  ASSERT_GE(prefill, 0);
  std::vector<int32_t> tokens(9, 1);
  Status s = (*exec)->run(prefill, tokens.data(), 9, 0);
  EXPECT_EQ(s.message(), "tiny.fmb: program 'prefill': 9 rows requested, it takes 1 to 8");
  s = (*exec)->run(prefill, tokens.data(), 0, 0);
  EXPECT_EQ(s.message(), "tiny.fmb: program 'prefill': 0 rows requested, it takes 1 to 8");
  s = (*exec)->run(prefill, tokens.data(), 4, 30);
  EXPECT_EQ(s.message(), "tiny.fmb: program 'prefill': positions 30..33 do not fit "
                         "in the KV cache (capacity 32)");
  tokens[3] = 99;
  s = (*exec)->run(prefill, tokens.data(), 4, 0);
  EXPECT_EQ(s.message(), "tiny.fmb: program 'prefill': token 99 (row 3) is out of "
                         "range (vocab 40)");
  tokens[3] = 1;
  // Without the executable, dispatching programs cannot run.
  s = (*exec)->run(prefill, tokens.data(), 4, 0);
  EXPECT_EQ(s.message(), "tiny.fmb: program 'prefill': command 2 calls generated "
                         "code, which was not loaded (LoadOptions::loadExecutable)");
}

TEST(Executor, LoadWithoutExecutable) {
  TinyModel tiny;
  LoadOptions options;
  options.loadExecutable = false;
  auto model = load(tiny.build({}, kernelsSo()), options);
  ASSERT_TRUE(model);
  EXPECT_FALSE(model->executableLoaded());
  Session session(model, SessionOptions{1});
  ASSERT_TRUE(session.status().isOk());
  auto r = session.prefill(kTokens);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.message().find("not loaded"), std::string::npos) << r.message();
}

TEST(Executor, Metadata) {
  TinyModel tiny;
  auto model = load(tiny.build({}, kernelsSo()));
  ASSERT_TRUE(model);
  EXPECT_EQ(model->name(), "tiny.fmb");
  EXPECT_EQ(model->family(), "test");
  EXPECT_EQ(model->modelName(), "test-model");
  EXPECT_EQ(model->configJson(), "{}");
  EXPECT_EQ(model->device(), "cpu");
  EXPECT_EQ(model->targets(), std::vector<std::string>{"cpu"});
  EXPECT_EQ(model->vocabSize(), 40);
  EXPECT_EQ(model->hiddenSize(), 16);
  EXPECT_EQ(model->numLayers(), 1);
  EXPECT_EQ(model->parameters(), 1234);
  EXPECT_EQ(model->weightBytes(),
            int64_t(sizeof(float)) * (40 * 16 * 2 + 16 * 16 * 2 + 8 * 16 * 2));
  EXPECT_EQ(model->kvBytesPerToken(), 2 * 8 * 4);
  EXPECT_EQ(model->contextLength(), 32);
  ASSERT_EQ(model->programs().size(), 3u);
  EXPECT_EQ(model->programs()[0].phase, "prefill");
  ASSERT_NE(model->program("prefill_last"), nullptr);
  EXPECT_TRUE(model->program("prefill_last")->logitsLastRowOnly);
  EXPECT_EQ(model->program("decode")->maxRows, 1);
  EXPECT_EQ(model->program("nope"), nullptr);
  ASSERT_EQ(model->caches().size(), 1u);
  EXPECT_EQ(model->caches()[0].capacity, 32);
  EXPECT_EQ(model->executableFormat(), "elf-so");
  EXPECT_EQ(model->executableTriple(), "x86_64-unknown-linux-gnu");
  EXPECT_TRUE(model->executableLoaded());
}

TEST(Executor, LoadFromFile) {
  TinyModel tiny;
  auto file = tiny.build({}, kernelsSo());
  char path[] = "/tmp/fm-runtime-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, file.data(), file.size()), ssize_t(file.size()));
  close(fd);
  LoadOptions options;
  options.verifyHash = true;
  auto model = Model::load(path, options);
  ASSERT_TRUE(model.isOk()) << model.message();
  Session session(*model, SessionOptions{1});
  auto logits = session.prefill(kTokens, true);
  ASSERT_TRUE(logits.isOk()) << logits.message();
  std::vector<float> want = tiny.reference(kTokens);
  expectNear(logits->data, want.data(), want.size(), "from file");
  // Two models from one process load their own executables.
  auto second = Model::load(path, options);
  ASSERT_TRUE(second.isOk()) << second.message();
  unlink(path);

  auto missing = Model::load("/nonexistent/model.fmb");
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.message(),
            "/nonexistent/model.fmb: cannot open: No such file or directory");
}

// A model whose generated code records how it is called: rows and pos of a
// full-chunk dispatch and of a last_row_only one.
TEST(Executor, DispatchRowsAndPositions) {
  ArtifactBuilder b;
  b.vocab = 4;
  b.addCache("kv", 1, 1, 4, 64);
  b.setExecutable("elf-so", "x86_64-unknown-linux-gnu",
                  {"fmt_write_kv", "fmt_record"}, kernelsSo());
  // logits: 1 row of 4 floats at 0; the full-chunk record at 8.
  std::vector<ArtifactBuilder::Cmd> cmds = {
      b.dispatch(1, {b.bufferArg(buf(8, 4, 4))}, "full"),
      b.dispatch(1, {b.bufferArg(buf(0, 4, 4))}, "last", /*lastRowOnly=*/true),
  };
  b.addProgram("prefill_last", 8, 48, buf(0, 4, 4), true, cmds);
  auto model = load(b.finish());
  ASSERT_TRUE(model);
  Session session(model, SessionOptions{1});
  std::vector<int32_t> tokens = {0, 1, 2, 3, 0};
  auto r = session.prefill(tokens.data(), 3, false, 2); // chunks of 2 + 1
  ASSERT_TRUE(r.isOk()) << r.message();
  // The last chunk: 1 row at position 2.
  EXPECT_EQ(r->data[0], 1.0f);
  EXPECT_EQ(r->data[1], 2.0f);
  EXPECT_EQ(r->data[2], 2.0f); // two calls
  auto r2 = session.prefill(tokens.data(), 5, false, 0); // one chunk of 5 at 3
  ASSERT_TRUE(r2.isOk()) << r2.message();
  EXPECT_EQ(r2->data[0], 1.0f);
  EXPECT_EQ(r2->data[1], 7.0f); // pos + rows - 1
  EXPECT_EQ(r2->data[2], 3.0f);
  // The full-chunk call saw 5 rows at position 3 (arena float 8 on).
  EXPECT_EQ(r2->data[8], 5.0f);
  EXPECT_EQ(r2->data[9], 3.0f);
}

TEST(Executor, ExecutableForAnotherMachine) {
  TinyModel tiny;
  {
    // A Mach-O object: never loadable here.
    ArtifactBuilder b;
    b.vocab = 4;
    b.setExecutable("macho-o", "arm64-apple-macosx14.0", {"f"}, {1, 2, 3});
    b.addProgram("decode", 1, 8, buf(0, 4, 4), false,
                 {b.dispatch(0, {b.bufferArg(buf(0, 4, 4))})});
    auto file = b.finish();
    auto model = Model::loadFromBuffer(file.data(), file.size(), "mac.fmb");
    ASSERT_FALSE(model.isOk());
    EXPECT_EQ(model.message(),
              "mac.fmb: executable for arm64-apple-macosx14.0 cannot run on this "
              "machine (format 'macho-o'; this runtime loads 'elf-so' and 'static')");
    // Without the executable it loads (for inspection).
    LoadOptions options;
    options.loadExecutable = false;
    EXPECT_TRUE(Model::loadFromBuffer(file.data(), file.size(), "mac.fmb", options));
  }
  {
    // An ELF shared object for another architecture.
    std::vector<uint8_t> image = kernelsSo();
    uint16_t other = EM_AARCH64;
#if defined(__aarch64__)
    other = EM_X86_64;
#endif
    std::memcpy(image.data() + offsetof(Elf64_Ehdr, e_machine), &other, 2);
    ArtifactBuilder b;
    b.vocab = 4;
    b.setExecutable("elf-so", "aarch64-unknown-linux-gnu", {"fmt_record"}, image);
    b.addProgram("decode", 1, 8, buf(0, 4, 4), false,
                 {b.dispatch(0, {b.bufferArg(buf(0, 4, 4))})});
    auto file = b.finish();
    auto model = Model::loadFromBuffer(file.data(), file.size(), "arm.fmb");
    ASSERT_FALSE(model.isOk());
#if defined(__x86_64__)
    EXPECT_EQ(model.message(),
              "arm.fmb: executable for aarch64-unknown-linux-gnu cannot run on this "
              "machine: the image is aarch64 code, this machine is x86_64");
#endif
  }
  {
    // A function the image does not define.
    ArtifactBuilder b;
    b.vocab = 4;
    b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"fmt_record", "nope"},
                    kernelsSo());
    b.addProgram("decode", 1, 8, buf(0, 4, 4), false,
                 {b.dispatch(0, {b.bufferArg(buf(0, 4, 4))})});
    auto file = b.finish();
    auto model = Model::loadFromBuffer(file.data(), file.size(), "f.fmb");
    ASSERT_FALSE(model.isOk());
    EXPECT_EQ(model.message(), "f.fmb: executable for x86_64-unknown-linux-gnu is corrupt: "
                               "function 'nope' is not in the image's symbol table");
  }
  {
    // Not an ELF file at all.
    ArtifactBuilder b;
    b.vocab = 4;
    b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f"}, {1, 2, 3, 4});
    b.addProgram("decode", 1, 8, buf(0, 4, 4), false,
                 {b.dispatch(0, {b.bufferArg(buf(0, 4, 4))})});
    auto file = b.finish();
    auto model = Model::loadFromBuffer(file.data(), file.size(), "g.fmb");
    ASSERT_FALSE(model.isOk());
    EXPECT_EQ(model.message(), "g.fmb: executable for x86_64-unknown-linux-gnu cannot "
                               "run on this machine: the image is not an ELF file");
  }
}

TEST(Executor, F16Weights) {
  // Embed and MatMul on f16 weights: logits = W · E[token], exact in f16.
  auto half = [](float f) -> uint16_t {
    // Small integers and halves only: exact conversions.
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint16_t sign = (bits >> 16) & 0x8000;
    if (f == 0.0f)
      return sign;
    int32_t exp = int32_t((bits >> 23) & 0xff) - 127 + 15;
    return uint16_t(sign | (exp << 10) | ((bits >> 13) & 0x3ff));
  };
  std::vector<float> E = {1, 2, -1, 0.5f, 0, 3, 2, 1};      // [2][4]
  std::vector<float> W = {1, 0, 0, 0, 0, 1, 0, 0};             // [2][4]
  auto bytes = [&](const std::vector<float> &v) {
    std::vector<uint8_t> out(v.size() * 2);
    for (size_t i = 0; i < v.size(); ++i) {
      uint16_t h = half(v[i]);
      std::memcpy(&out[2 * i], &h, 2);
    }
    return out;
  };
  ArtifactBuilder b;
  b.vocab = 2;
  uint32_t e = b.addRawWeight("embed", {2, 4}, fa::DType::F16, bytes(E));
  uint32_t w = b.addRawWeight("w", {2, 4}, fa::DType::F16,
                              bytes(W));
  b.addProgram("decode", 1, 8, buf(4, 2, 2), false,
               {b.embed(e, buf(0, 4, 4)), b.matmul(buf(0, 4, 4), {w}, buf(4, 2, 2), 4, 2)});
  auto model = load(b.finish());
  ASSERT_TRUE(model);
  Session session(model, SessionOptions{1});
  auto r = session.decode(1);
  ASSERT_TRUE(r.isOk()) << r.message();
  EXPECT_EQ((*r)[0], 0.0f);
  EXPECT_EQ((*r)[1], 3.0f);
}

} // namespace
} // namespace fm::test
