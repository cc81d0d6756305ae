// LoRA adapters in the runtime: the .fmba loader's refusals (each names the
// file and the element), binding to a model (architecture, source digest,
// projections, shapes), and sessions that attach, stack, switch and detach
// adapters on one shared model, against plain C++ logits of the merged
// weights (AdapterBuilder.h's LoraBase).
#include "AdapterBuilder.h"

#include "fm/adapter.h"
#include "fm/runtime.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fm::test {
namespace {

// Whether `s` holds `part` (the message, when not).
testing::AssertionResult Contains(const std::string &s, const std::string &part) {
  if (s.find(part) != std::string::npos)
    return testing::AssertionSuccess();
  return testing::AssertionFailure() << "'" << s << "' does not contain '" << part << "'";
}

const std::vector<int32_t> kTokens = {3, 17, 0, 9, 12, 5, 19};

SessionOptions threads(int n) {
  SessionOptions o;
  o.threads = n;
  return o;
}

std::shared_ptr<Model> loadBase(const LoraBase &base, bool withDigest = true,
                                const std::string &name = "base.fmb") {
  const std::vector<uint8_t> file = base.build(withDigest);
  LoadOptions o;
  o.loadExecutable = false;
  auto m = Model::loadFromBuffer(file.data(), file.size(), name, o);
  EXPECT_TRUE(m.isOk()) << m.message();
  return m ? *m : nullptr;
}

Expected<std::shared_ptr<Adapter>> loadAdapter(std::shared_ptr<Model> model,
                                               AdapterBuilder &a,
                                               const std::string &name = "a.fmba") {
  const std::vector<uint8_t> file = a.finish();
  return Adapter::loadFromBuffer(std::move(model), file.data(), file.size(), name);
}

std::string fileError(const std::vector<uint8_t> &file) {
  auto f = AdapterFile::fromBuffer(file.data(), file.size(), "a.fmba", {});
  return f ? std::string() : f.message();
}

std::string bindError(std::shared_ptr<Model> model, AdapterBuilder &a) {
  auto ad = loadAdapter(std::move(model), a);
  return ad ? std::string() : ad.message();
}

// Every row of the session's logits against the reference, relative to the
// largest reference logit.
void expectLogits(Session &s, const std::vector<double> &want, int64_t chunk,
                  double tol = 1e-5) {
  ASSERT_TRUE(s.reset().isOk());
  auto got = s.prefill(kTokens, /*allLogits=*/true, chunk);
  ASSERT_TRUE(got.isOk()) << got.message();
  ASSERT_EQ(size_t(got->rows * got->vocab), want.size());
  double scale = 0;
  for (double w : want)
    scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got->data[i], want[i], tol * scale) << "logit " << i;
}

// ---------------------------------------------------------------------------
// The file

TEST(AdapterFile, AcceptsAWellFormedAdapter) {
  LoraBase base;
  AdapterBuilder a = base.adapter(1, 4, 0.5f, /*q8=*/true);
  const std::vector<uint8_t> file = a.finish();
  auto f = AdapterFile::fromBuffer(file.data(), file.size(), "a.fmba", {});
  ASSERT_TRUE(f.isOk()) << f.message();
  EXPECT_EQ((*f)->root().loras()->size(), 4u);
  EXPECT_EQ((*f)->parameters(), 4 * (32 + 16) + 4 * (32 + 16) + 4 * (32 + 32) +
                                    4 * (32 + 20));
  EXPECT_EQ((*f)->root().loras()->Get(2)->a()->dtype(), adapter::DType::Q8);
  EXPECT_EQ((*f)->root().loras()->Get(0)->b_t()->dtype(), adapter::DType::F16);
}

TEST(AdapterFile, RefusesWhatIsNotAnAdapter) {
  EXPECT_TRUE(Contains(fileError({1, 2, 3}), "a.fmba: not an fmc adapter"));
  LoraBase base;
  EXPECT_TRUE(Contains(fileError(base.build()),
              "a.fmba: a model (.fmb), not an adapter (.fmba)"));
  AdapterBuilder a = base.adapter(1, 4, 1.0f);
  a.identifier = "XXXX";
  EXPECT_TRUE(Contains(fileError(a.finish()), "bad identifier"));
}

TEST(AdapterFile, RefusesAnotherVersion) {
  AdapterBuilder a = LoraBase().adapter(1, 4, 1.0f);
  a.schemaVersion = 7;
  EXPECT_TRUE(Contains(fileError(a.finish()),
              "a.fmba: adapter schema version 7 is not supported "
                        "(this runtime reads version 1): recompile it"));
}

TEST(AdapterFile, ChecksTheDigest) {
  AdapterBuilder a = LoraBase().adapter(1, 4, 1.0f);
  a.corruptDigest = true;
  EXPECT_TRUE(Contains(fileError(a.finish()),
              "a.fmba: corrupt: the digest does not match"));
  a.corruptDigest = false;
  std::vector<uint8_t> file = a.finish();
  file.back() ^= 1; // a byte of the data section
  EXPECT_TRUE(Contains(fileError(file), "the digest does not match"));
  a.dropDigest = true;
  EXPECT_TRUE(Contains(fileError(a.finish()), "the adapter has no digest"));
}

TEST(AdapterFile, RefusesATruncatedDataSection) {
  AdapterBuilder a = LoraBase().adapter(1, 4, 1.0f);
  a.dataSizeOverride = 1 << 20;
  EXPECT_TRUE(Contains(fileError(a.finish()), "a.fmba: truncated: a data section"));
}

TEST(AdapterFile, RefusesBadLoras) {
  LoraBase base;
  auto broken = [&](auto change) {
    AdapterBuilder a = base.adapter(1, 4, 1.0f);
    change(a.loras[1]);
    return fileError(a.finish());
  };
  const std::string at = "a.fmba: lora 1 ('model.layers.0.self_attn.k_proj.weight'): ";
  EXPECT_TRUE(Contains(broken([](TestLora &l) { l.aRows = 3; }),
              at + "A (lora_A) has 3 rows, expected the rank 4"));
  EXPECT_TRUE(Contains(broken([](TestLora &l) { l.dtypeOverride = 0; }),
              at + "A (lora_A) is dtype 0 (f16 or q8 expected)"));
  EXPECT_TRUE(Contains(broken([](TestLora &l) { l.dtypeOverride = 6; l.aGroup = 48; }),
              at + "A (lora_A) is q8 in groups of 48"));
  EXPECT_TRUE(Contains(broken([](TestLora &l) { l.aSize = 10; }),
              at + "A (lora_A) has 10 bytes, but 4 x 32 f16 takes 256"));
  EXPECT_TRUE(Contains(broken([](TestLora &l) { l.aOffset = 32; }),
              at + "A (lora_A) is at offset 32, not a multiple of 64"));
  EXPECT_TRUE(Contains(broken([](TestLora &l) { l.aOffset = 1 << 20; }),
              "is outside the data section"));
  EXPECT_TRUE(Contains(broken([](TestLora &l) { l.btCols = 0; }),
              at + "B^T (lora_B) has 0 columns"));
  AdapterBuilder dup = base.adapter(1, 4, 1.0f);
  dup.loras[2].weight = dup.loras[0].weight;
  EXPECT_TRUE(Contains(fileError(dup.finish()),
              "lora 2 ('model.layers.0.self_attn.q_proj.weight'): "
                        "updates a weight an earlier lora updates"));
  AdapterBuilder none = base.adapter(1, 4, 1.0f);
  none.loras.clear();
  EXPECT_TRUE(Contains(fileError(none.finish()), "a.fmba: the adapter has no LoRA weights"));
  AdapterBuilder nan = base.adapter(1, 4, NAN);
  EXPECT_TRUE(Contains(fileError(nan.finish()), "is not finite"));
}

// ---------------------------------------------------------------------------
// Binding to a model

TEST(AdapterBind, RefusesAnotherBase) {
  LoraBase base;
  auto model = loadBase(base);
  AdapterBuilder other = base.adapter(1, 4, 1.0f);
  other.family = "llama";
  other.hidden = 64;
  EXPECT_TRUE(Contains(bindError(model, other),
              "a.fmba was compiled for another base: a llama (hidden "
                        "64, 1 layers, vocab 20) model, but base.fmb is test "
                        "(hidden 32, 1 layers, vocab 20)"));
  AdapterBuilder digest = base.adapter(1, 4, 1.0f);
  digest.sourceDigest = std::vector<uint8_t>(32, 9);
  EXPECT_TRUE(Contains(bindError(model, digest),
              "a.fmba was compiled for another base: for the "
                        "checkpoint with source digest 0909090909090909, but "
                        "base.fmb was compiled from 0707070707070707"));
  auto old = loadBase(base, /*withDigest=*/false);
  AdapterBuilder a = base.adapter(1, 4, 1.0f);
  EXPECT_TRUE(Contains(bindError(old, a),
              "base.fmb records no source-weights digest"));
}

TEST(AdapterBind, RefusesWeightsThatAreNoProjection) {
  LoraBase base;
  auto model = loadBase(base);
  AdapterBuilder a = base.adapter(1, 4, 1.0f);
  a.loras.push_back(LoraBase::lora("model.layers.0.self_attn.v_proj.weight", 4,
                                   32, 16, 1.0f, 5));
  EXPECT_TRUE(Contains(bindError(model, a),
              "a.fmba: lora 4 ('model.layers.0.self_attn.v_proj.weight'): "
                        "base.fmb has no weight"));
  AdapterBuilder e = base.adapter(1, 4, 1.0f);
  e.loras.push_back(LoraBase::lora("model.embed_tokens.weight", 4, 32, 20, 1.0f, 5));
  EXPECT_TRUE(Contains(bindError(model, e),
              "'model.embed_tokens.weight' is not a projection of base.fmb"));
}

TEST(AdapterBind, RefusesWrongShapes) {
  LoraBase base;
  auto model = loadBase(base);
  AdapterBuilder a = base.adapter(1, 4, 1.0f);
  a.loras[2] = LoraBase::lora("model.layers.0.self_attn.o_proj.weight", 4, 16, 32,
                              1.0f, 5);
  EXPECT_TRUE(Contains(bindError(model, a),
              "lora 2 ('model.layers.0.self_attn.o_proj.weight'): A is "
                        "[4, 16] and B [32, 4], but the base weight is [32, 32] "
                        "(A must be [rank, 32], B [32, rank])"));
}

// ---------------------------------------------------------------------------
// Sessions

TEST(AdapterSession, MatchesTheMergedWeights) {
  LoraBase base;
  auto model = loadBase(base);
  for (bool q8 : {false, true}) {
    AdapterBuilder a = base.adapter(11, 4, 0.75f, q8);
    auto adapter = loadAdapter(model, a);
    ASSERT_TRUE(adapter.isOk()) << adapter.message();
    const std::vector<double> want = base.logits(kTokens, {{&a, 1.0f}});
    for (int threads : {1, 2}) {
      SessionOptions o;
      o.threads = threads;
      o.adapters = {{*adapter, 1.0f}};
      Session s(model, o);
      ASSERT_TRUE(s.status().isOk()) << s.status().message();
      for (int64_t chunk : {0, 1, 3})
        expectLogits(s, want, chunk);
    }
  }
}

TEST(AdapterSession, StacksAdaptersWithTheirScales) {
  LoraBase base;
  auto model = loadBase(base);
  AdapterBuilder a = base.adapter(21, 4, 0.5f);
  AdapterBuilder b = base.adapter(31, 8, 2.0f, /*q8=*/true);
  b.loras.erase(b.loras.begin() + 1); // b: q, o and lm, not k
  auto ad = loadAdapter(model, a), bd = loadAdapter(model, b, "b.fmba");
  ASSERT_TRUE(ad.isOk() && bd.isOk()) << ad.message() << bd.message();
  Session s(model, threads(2));
  ASSERT_TRUE(s.setAdapters({{*ad, 0.5f}, {*bd, -1.25f}}).isOk());
  EXPECT_EQ(s.adapters().size(), 2u);
  const auto want = base.logits(kTokens, {{&a, 0.5f}, {&b, -1.25f}});
  expectLogits(s, want, 0);
  expectLogits(s, want, 1);
}

TEST(AdapterSession, SessionsOfOneModelRunTheirOwnAdapters) {
  LoraBase base;
  auto model = loadBase(base);
  AdapterBuilder a = base.adapter(41, 4, 1.0f), b = base.adapter(51, 2, 3.0f);
  auto ad = loadAdapter(model, a), bd = loadAdapter(model, b, "b.fmba");
  ASSERT_TRUE(ad.isOk() && bd.isOk());
  Session plain(model), withA(model), withB(model);
  ASSERT_TRUE(withA.setAdapters({{*ad, 1.0f}}).isOk());
  ASSERT_TRUE(withB.setAdapters({{*bd, 1.0f}}).isOk());
  // Interleaved: each session's kernels are its own.
  for (int round = 0; round < 2; ++round) {
    expectLogits(withA, base.logits(kTokens, {{&a, 1.0f}}), 0);
    expectLogits(plain, base.logits(kTokens), 0);
    expectLogits(withB, base.logits(kTokens, {{&b, 1.0f}}), 1);
  }
}

TEST(AdapterSession, DetachingRestoresTheBaseExactly) {
  LoraBase base;
  auto model = loadBase(base);
  AdapterBuilder a = base.adapter(61, 4, 1.0f);
  auto ad = loadAdapter(model, a);
  ASSERT_TRUE(ad.isOk());
  Session s(model, threads(2));
  auto before = s.prefill(kTokens, true);
  ASSERT_TRUE(before.isOk());
  const std::vector<float> base0(before->data, before->data + before->rows * before->vocab);
  ASSERT_TRUE(s.setAdapters({{*ad, 1.0f}}).isOk());
  ASSERT_TRUE(s.reset().isOk());
  auto with = s.prefill(kTokens, true);
  ASSERT_TRUE(with.isOk());
  EXPECT_NE(std::vector<float>(with->data, with->data + base0.size()), base0);
  ASSERT_TRUE(s.setAdapters({}).isOk());
  EXPECT_TRUE(s.adapters().empty());
  ASSERT_TRUE(s.reset().isOk());
  auto after = s.prefill(kTokens, true);
  ASSERT_TRUE(after.isOk());
  EXPECT_EQ(std::vector<float>(after->data, after->data + base0.size()), base0)
      << "the base's logits, bit for bit";
  // Scale 0: the adapter's side path adds nothing.
  ASSERT_TRUE(s.setAdapters({{*ad, 0.0f}}).isOk());
  expectLogits(s, base.logits(kTokens), 0, 1e-6);
}

TEST(AdapterSession, RefusesAnAdapterOfAnotherModel) {
  LoraBase base;
  auto m1 = loadBase(base, true, "one.fmb"), m2 = loadBase(base, true, "two.fmb");
  AdapterBuilder a = base.adapter(71, 4, 1.0f);
  auto ad = loadAdapter(m1, a);
  ASSERT_TRUE(ad.isOk());
  Session s(m2);
  Status st = s.setAdapters({{*ad, 1.0f}});
  EXPECT_TRUE(Contains(st.message(),
              "a.fmba was loaded for one.fmb, not for this session's "
                        "model two.fmb"));
  Session own(m1);
  ASSERT_TRUE(own.setAdapters({{*ad, 1.0f}}).isOk());
  EXPECT_TRUE(Contains(own.setAdapters({{*ad, INFINITY}}).message(),
                       "a.fmba: scale inf is not finite"));
  EXPECT_TRUE(Contains(own.setAdapters({{nullptr, 1.0f}}).message(),
                       "one.fmb: adapter 0 is null"));
  // A failed attach leaves the session as it was.
  EXPECT_TRUE(s.adapters().empty());
  expectLogits(s, base.logits(kTokens), 0);
  ASSERT_EQ(own.adapters().size(), 1u);
  expectLogits(own, base.logits(kTokens, {{&a, 1.0f}}), 0);
  SessionOptions o;
  o.adapters = {{*ad, 1.0f}};
  Session bad(m2, o);
  EXPECT_TRUE(Contains(bad.status().message(), "not for this session's model"));
}

} // namespace
} // namespace fm::test
