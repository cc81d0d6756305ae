// Session::generate with a TokenConstraint on a real (hand-built, random-weight) model: the
// executor tests' TinyModel, 40 tokens wide, generating over the toy vocabulary under a JSON
// Schema at temperature 1; every output matches the plain reference, generation ends at the
// forced eos, and the processor's masks really steer the sampler.
#include "TinyModel.h"
#include "ToyVocab.h"

#include "fm/guided.h"
#include "fm/runtime.h"
#include "fm/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace fm::test {
namespace {

std::shared_ptr<Model> tinyModel() {
  static const std::vector<uint8_t> file =
      TinyModel().build(TinyModel::Options{}, readFile(FM_TEST_KERNELS_SO));
  auto model = Model::loadFromBuffer(file.data(), file.size(), "tiny.fmb");
  EXPECT_TRUE(model) << model.message();
  return model ? *model : nullptr;
}

TEST(GuidedSession, EveryOutputMatchesTheSchema) {
  auto model = tinyModel();
  ASSERT_TRUE(model);
  auto g = Grammar::fromJsonSchema(toySchema());
  ASSERT_TRUE(g) << g.message();
  auto masker = TokenMasker::create(*g, toyVocabulary());
  ASSERT_TRUE(masker) << masker.message();
  const Vocabulary vocab = toyVocabulary();
  std::set<std::string> distinct;
  for (uint64_t seed = 0; seed < 24; ++seed) {
    SCOPED_TRACE(seed);
    Session session(model, SessionOptions{1});
    ASSERT_TRUE(session.status()) << session.status().message();
    Sampler sampler(1.0f, 0, 1.0f, seed);
    GuidedDecoder dec(*masker);
    auto out = session.generate({3, 17, int32_t(seed % 40)}, 30, sampler, dec);
    ASSERT_TRUE(out) << out.message();
    std::string text;
    for (int32_t t : *out)
      if (t != kToyEos)
        text += vocab.tokens[size_t(t)];
    EXPECT_TRUE(toyComplete(text)) << text;
    EXPECT_EQ(text, dec.text());
    EXPECT_EQ(out->back(), kToyEos);
    EXPECT_TRUE(dec.finished());
    // The eos is returned but not fed back: prompt + every other generated token.
    EXPECT_EQ(session.position(), int64_t(3 + out->size() - 1));
    distinct.insert(text);
  }
  EXPECT_GE(distinct.size(), 8u); // sampled, not one fixed path
}

TEST(GuidedSession, IncompleteAtTheTokenLimit) {
  auto model = tinyModel();
  ASSERT_TRUE(model);
  auto g = Grammar::fromJsonSchema(toySchema());
  ASSERT_TRUE(g);
  auto masker = TokenMasker::create(*g, toyVocabulary());
  ASSERT_TRUE(masker);
  Session session(model, SessionOptions{1});
  Sampler sampler(1.0f, 0, 1.0f, 5);
  GuidedDecoder dec(*masker);
  auto out = session.generate({1, 2}, 3, sampler, dec);
  ASSERT_TRUE(out) << out.message();
  EXPECT_EQ(out->size(), 3u);
  EXPECT_FALSE(dec.isComplete());
  EXPECT_FALSE(dec.finished());
}

// A processor that allows only even tokens, forces token 7 every fifth step and stops after 12.
class EvenOnly : public TokenConstraint {
public:
  Expected<Step> process(float *logits, int64_t vocab) override {
    Step s;
    if (steps_ == 12) {
      s.stop = true;
      return s;
    }
    if (steps_ % 5 == 4) {
      s.forced = 7;
      return s;
    }
    for (int64_t t = 1; t < vocab; t += 2)
      logits[t] = -INFINITY;
    return s;
  }
  Status accept(int32_t token) override {
    ++steps_;
    seen.push_back(token);
    return Status::ok();
  }
  bool finished() const override { return false; }
  std::vector<int32_t> seen;

private:
  int steps_ = 0;
};

TEST(GuidedSession, ProcessorMasksForcesAndStops) {
  auto model = tinyModel();
  ASSERT_TRUE(model);
  Session session(model, SessionOptions{1});
  Sampler sampler(1.0f, 0, 1.0f, 9);
  EvenOnly p;
  auto out = session.generate({4, 5, 6}, 30, sampler, p);
  ASSERT_TRUE(out) << out.message();
  ASSERT_EQ(out->size(), 12u);
  EXPECT_EQ(*out, p.seen);
  for (size_t i = 0; i < out->size(); ++i) {
    if (i % 5 == 4)
      EXPECT_EQ((*out)[i], 7);
    else
      EXPECT_EQ((*out)[i] % 2, 0) << i;
  }
  EXPECT_EQ(session.position(), 3 + 12);
}

} // namespace
} // namespace fm::test
