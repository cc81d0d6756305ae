// Text generation over a model with an embedded tokenizer
// (Session::generate, runtime/src/text/): streamed pieces are whole UTF-8
// characters, stop ids, stop strings, the callback and maxNewTokens end it,
// ids without a token are never sampled, and the logits processor hook
// masks what is sampled; a TokenConstraint through it (ConstrainedLogits).
// Also the stop-string scanner against a plain find() over the whole text.
#include "TinyModel.h"
#include "fm/constrained_logits.h"
#include "fm/runtime.h"
#include "fm/sampler.h"
#include "fm/tokenizer.h"
#include "text/StopStrings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

namespace fm::test {
namespace {

const std::vector<uint8_t> &kernelsSo() {
  static const std::vector<uint8_t> image = readFile(FM_TEST_KERNELS_SO);
  return image;
}

// A SentencePiece-style tokenizer of 35 ids (the model has 40): <unk> <s>
// </s>, the bytes of 東 (E6 9D B1) and é (C3 A9), ▁ and a..z.
constexpr int32_t kE6 = 3, k9D = 4, kB1 = 5, kC3 = 6, kA9 = 7, kSpace = 8;
constexpr int32_t kA = 9; // 'a'; 'z' is 34
constexpr int32_t kTokens = 35;

std::string tokenizerJson() {
  std::string vocab = R"("<unk>": 0, "<s>": 1, "</s>": 2, "<0xE6>": 3,
      "<0x9D>": 4, "<0xB1>": 5, "<0xC3>": 6, "<0xA9>": 7, "▁": 8)";
  for (int c = 0; c < 26; ++c)
    vocab += ", \"" + std::string(1, char('a' + c)) + "\": " + std::to_string(kA + c);
  return R"({"added_tokens": [
      {"id": 0, "content": "<unk>", "special": true},
      {"id": 1, "content": "<s>", "special": true},
      {"id": 2, "content": "</s>", "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [
      {"type": "Prepend", "prepend": "▁"},
      {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
      {"type": "ByteFallback"}, {"type": "Fuse"},
      {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true,
      "fuse_unk": true, "vocab": {)" +
         vocab + R"(}, "merges": []}})";
}

bool validUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size())
      return false;
    for (int k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2)
        return false;
    i += n;
  }
  return true;
}

class Generate : public ::testing::Test {
protected:
  void SetUp() override {
    TinyModel tiny;
    TinyModel::Options o;
    o.capacity = 64;
    o.tokenizerJson = tokenizerJson();
    o.tokenizerConfig = R"({"bos_token": "<s>", "eos_token": "</s>"})";
    o.stopIds = {2};
    file_ = tiny.build(o, kernelsSo());
    auto m = Model::loadFromBuffer(file_.data(), file_.size(), "t.fmb");
    ASSERT_TRUE(m.isOk()) << m.message();
    model_ = *m;
    ASSERT_TRUE(model_->hasTokenizer());
    session_ = std::make_unique<Session>(model_, SessionOptions{1});
    ASSERT_TRUE(session_->status().isOk()) << session_->status().message();
    auto t = model_->tokenizer();
    ASSERT_TRUE(t.isOk()) << t.message();
    tokenizer_ = *t;
  }

  /// A processor that allows only `script[i]` as the i-th generated id.
  static LogitsProcessor forcing(std::vector<int32_t> script,
                                 std::vector<size_t> *calls = nullptr) {
    return [script, calls](const std::vector<int32_t> &generated, float *logits,
                           int64_t vocab) -> Status {
      if (calls)
        calls->push_back(generated.size());
      const int32_t want = script[generated.size() % script.size()];
      for (int64_t id = 0; id < vocab; ++id)
        if (id != want)
          logits[id] = -std::numeric_limits<float>::infinity();
      return Status::ok();
    };
  }

  std::vector<uint8_t> file_;
  std::shared_ptr<Model> model_;
  std::unique_ptr<Session> session_;
  Tokenizer tokenizer_;
};

TEST_F(Generate, StreamsWholeCharactersInTheOrderForced) {
  // ▁ 東 (three byte tokens) a é (two) b: the pieces are whole characters,
  // nothing comes out while a character is unfinished.
  const std::vector<int32_t> script = {kSpace, kE6, k9D, kB1, kA, kC3, kA9, kA + 1};
  std::vector<size_t> calls;
  GenerateOptions o;
  o.maxNewTokens = static_cast<int64_t>(script.size());
  o.useModelStopIds = false;
  o.logitsProcessor = forcing(script, &calls);
  std::vector<std::string> pieces;
  Sampler sampler(1.0f, 0, 1.0f, 3);
  auto g = session_->generateText({1, kA + 7, kA + 8}, sampler, o, [&](std::string_view p) {
    pieces.emplace_back(p);
    return true;
  });
  ASSERT_TRUE(g.isOk()) << g.message();
  EXPECT_EQ(g->tokens, script);
  EXPECT_EQ(g->stop, StopReason::MaxTokens);
  EXPECT_EQ(calls, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  std::string all;
  for (const std::string &p : pieces) {
    EXPECT_TRUE(validUtf8(p)) << p;
    all += p;
  }
  EXPECT_EQ(all, g->text);
  EXPECT_EQ(all, *tokenizer_.decode(script));
  EXPECT_EQ(all, "東aéb"); // Strip drops the leading space, as decode does
  // The fed context: the prompt, then every generated id but the last.
  EXPECT_EQ(session_->position(), 3 + static_cast<int64_t>(script.size()) - 1);
}

TEST_F(Generate, StopIdEndsItAndIsNotPrinted) {
  GenerateOptions o;
  o.maxNewTokens = 10;
  o.logitsProcessor = forcing({kA, kA + 1, 2, kA + 2});
  Sampler sampler(0.0f, 0, 1.0f, 0);
  auto g = session_->generate("ab", sampler, o);
  ASSERT_TRUE(g.isOk()) << g.message();
  EXPECT_EQ(g->prompt, *tokenizer_.encode("ab", true));
  EXPECT_EQ(g->prompt.front(), 1); // BOS
  EXPECT_EQ(g->tokens, (std::vector<int32_t>{kA, kA + 1, 2}));
  EXPECT_EQ(g->stop, StopReason::StopId);
  EXPECT_EQ(g->text, "ab");
}

TEST_F(Generate, StopStringEndsTheTextBeforeIt) {
  GenerateOptions o;
  o.maxNewTokens = 12;
  o.useModelStopIds = false;
  // "abcabcabc..." with stop "cab": the text is "ab".
  o.logitsProcessor = forcing({kA, kA + 1, kA + 2});
  o.stopStrings = {"cab", "zz"};
  Sampler sampler(0.0f, 0, 1.0f, 0);
  std::string streamed;
  auto g = session_->generateText({1}, sampler, o, [&](std::string_view p) {
    streamed += p;
    return true;
  });
  ASSERT_TRUE(g.isOk()) << g.message();
  EXPECT_EQ(g->stop, StopReason::StopString);
  EXPECT_EQ(g->text, "ab");
  EXPECT_EQ(streamed, "ab");
  EXPECT_EQ(g->tokens.size(), 5u); // a b c a b: "cab" completes at the 5th
}

TEST_F(Generate, CallbackStopsIt) {
  GenerateOptions o;
  o.maxNewTokens = 20;
  o.useModelStopIds = false;
  o.logitsProcessor = forcing({kA});
  Sampler sampler(0.0f, 0, 1.0f, 0);
  int calls = 0;
  auto g = session_->generateText({1}, sampler, o, [&](std::string_view) {
    return ++calls < 3;
  });
  ASSERT_TRUE(g.isOk()) << g.message();
  EXPECT_EQ(g->stop, StopReason::Callback);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(g->text, "aaa");
}

TEST_F(Generate, NeverSamplesIdsWithoutAToken) {
  // Hot sampling from the random model: ids 35..39 have no token.
  GenerateOptions o;
  o.maxNewTokens = 30;
  o.useModelStopIds = false;
  int seen = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    ASSERT_TRUE(session_->reset().isOk());
    Sampler sampler(3.0f, 0, 1.0f, seed);
    auto g = session_->generateText({1, kA}, sampler, o);
    ASSERT_TRUE(g.isOk()) << g.message();
    for (int32_t id : g->tokens) {
      EXPECT_LT(id, kTokens);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 4 * 30);
}

TEST_F(Generate, ContextFullEndsIt) {
  GenerateOptions o;
  o.maxNewTokens = 1000;
  o.useModelStopIds = false;
  Sampler sampler(0.0f, 0, 1.0f, 0);
  auto g = session_->generateText({1, kA}, sampler, o);
  ASSERT_TRUE(g.isOk()) << g.message();
  EXPECT_EQ(g->stop, StopReason::ContextFull);
  EXPECT_EQ(session_->position(), 64);
}

TEST_F(Generate, ProcessorErrorsAndAllMaskedAreErrors) {
  Sampler sampler(0.0f, 0, 1.0f, 0);
  GenerateOptions o;
  o.logitsProcessor = [](const std::vector<int32_t> &, float *, int64_t) {
    return Status::error("grammar: no way on");
  };
  auto g = session_->generateText({1}, sampler, o);
  ASSERT_FALSE(g.isOk());
  EXPECT_EQ(g.message(), "grammar: no way on");
  o.logitsProcessor = [](const std::vector<int32_t> &, float *logits, int64_t vocab) {
    for (int64_t i = 0; i < vocab; ++i)
      logits[i] = -std::numeric_limits<float>::infinity();
    return Status::ok();
  };
  ASSERT_TRUE(session_->reset().isOk());
  g = session_->generateText({1}, sampler, o);
  ASSERT_FALSE(g.isOk());
  EXPECT_NE(g.message().find("forbade every id"), std::string::npos) << g.message();
}

// A scripted TokenConstraint: forces script[0], then allows only `choices`
// once, then is finished (or says stop, with stopInstead). Records what it
// is handed.
class Scripted final : public TokenConstraint {
public:
  int32_t first = kA;
  std::vector<int32_t> choices = {kA + 1, kA + 2};
  bool stopInstead = false;
  std::vector<int32_t> accepted;
  int processed = 0;

  Expected<Step> process(float *logits, int64_t vocab) override {
    ++processed;
    Step step;
    if (accepted.empty()) {
      step.forced = first;
    } else if (accepted.size() == 1) {
      for (int64_t id = 0; id < vocab; ++id)
        if (std::find(choices.begin(), choices.end(), id) == choices.end())
          logits[id] = -std::numeric_limits<float>::infinity();
    } else {
      step.stop = true; // only reached with stopInstead
    }
    return step;
  }
  Status accept(int32_t token) override {
    if (token == 0)
      return Status::error("scripted: token 0 does not fit");
    accepted.push_back(token);
    return Status::ok();
  }
  bool finished() const override { return !stopInstead && accepted.size() == 2; }
};

TEST_F(Generate, ConstraintForcesMasksAndEndsWithAStopId) {
  for (bool stopInstead : {false, true}) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      ASSERT_TRUE(session_->reset().isOk());
      Scripted c;
      c.stopInstead = stopInstead;
      ConstrainedLogits constrained(c, {2});
      GenerateOptions o;
      o.maxNewTokens = 20;
      o.logitsProcessor = constrained.hook();
      Sampler sampler(5.0f, 0, 1.0f, seed); // hot: only the masks decide
      auto g = session_->generateText({1, kA}, sampler, o);
      ASSERT_TRUE(g.isOk()) << g.message();
      ASSERT_EQ(g->tokens.size(), 3u);
      EXPECT_EQ(g->tokens[0], kA);
      EXPECT_TRUE(g->tokens[1] == kA + 1 || g->tokens[1] == kA + 2) << g->tokens[1];
      EXPECT_EQ(g->tokens[2], 2); // the stop id, once the constraint is complete
      EXPECT_EQ(g->stop, StopReason::StopId);
      // Handed on before each step: the ids appended since the last.
      EXPECT_EQ(c.accepted, (std::vector<int32_t>{kA, g->tokens[1]}));
      ASSERT_TRUE(constrained.follow(g->tokens).isOk());
      // A finished constraint is not handed the stop id; one that said stop is.
      EXPECT_EQ(c.accepted.size(), stopInstead ? 3u : 2u);
      EXPECT_EQ(c.processed, stopInstead ? 3 : 2);
    }
  }
}

TEST_F(Generate, ConstraintFollowsTheLastTokenAndRefusesAnother) {
  Scripted c;
  ConstrainedLogits constrained(c, {2});
  GenerateOptions o;
  o.maxNewTokens = 2; // cut before the stop id
  o.logitsProcessor = constrained.hook();
  Sampler sampler(0.0f, 0, 1.0f, 0);
  auto g = session_->generateText({1}, sampler, o);
  ASSERT_TRUE(g.isOk()) << g.message();
  EXPECT_EQ(g->stop, StopReason::MaxTokens);
  EXPECT_EQ(c.accepted.size(), 1u); // the last token is not seen by the hook
  ASSERT_TRUE(constrained.follow(g->tokens).isOk());
  EXPECT_EQ(c.accepted, g->tokens);
  // One constraint per generation.
  Status again = constrained.follow({kA});
  ASSERT_FALSE(again.isOk());
  EXPECT_NE(again.message().find("one constraint per generation"), std::string::npos)
      << again.message();
  // The constraint's errors end the generation with them; so does a stop id
  // outside the model.
  ASSERT_TRUE(session_->reset().isOk());
  Scripted refusing;
  refusing.first = 0;
  ConstrainedLogits r(refusing, {2});
  o.logitsProcessor = r.hook();
  o.maxNewTokens = 5;
  g = session_->generateText({1}, sampler, o);
  ASSERT_FALSE(g.isOk());
  EXPECT_EQ(g.message(), "scripted: token 0 does not fit");
  ASSERT_TRUE(session_->reset().isOk());
  Scripted wide;
  ConstrainedLogits w(wide, {400});
  o.logitsProcessor = w.hook();
  o.useModelStopIds = false;
  g = session_->generateText({1}, sampler, o);
  ASSERT_FALSE(g.isOk());
  EXPECT_NE(g.message().find("token 400 (a stop id) is outside the model's 40 logits"),
            std::string::npos)
      << g.message();
}

TEST_F(Generate, BadRequestsAreErrors) {
  Sampler sampler(0.0f, 0, 1.0f, 0);
  GenerateOptions o;
  EXPECT_FALSE(session_->generateText({}, sampler, o).isOk());
  o.stopIds = {40};
  auto g = session_->generateText({1}, sampler, o);
  ASSERT_FALSE(g.isOk());
  EXPECT_NE(g.message().find("stop id 40 is out of range"), std::string::npos) << g.message();
}

TEST(GenerateWithoutTokenizer, SaysHowToGetOne) {
  TinyModel tiny;
  auto file = tiny.build({}, kernelsSo());
  auto m = Model::loadFromBuffer(file.data(), file.size(), "plain.fmb");
  ASSERT_TRUE(m.isOk()) << m.message();
  EXPECT_FALSE((*m)->hasTokenizer());
  Session session(*m, SessionOptions{1});
  Sampler sampler(0.0f, 0, 1.0f, 0);
  auto g = session.generate("hi", sampler);
  ASSERT_FALSE(g.isOk());
  EXPECT_NE(g.message().find("plain.fmb has no tokenizer"), std::string::npos) << g.message();
}

// StopStrings against the plain answer: the text before the stop string
// that completes first, character by character, for random texts over a
// small alphabet cut into random pieces.
TEST(StopStrings, MatchesACharacterByCharacterScan) {
  std::mt19937 rng(11);
  const std::string alphabet = "abc";
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text;
    const int n = static_cast<int>(rng() % 24);
    for (int i = 0; i < n; ++i)
      text += alphabet[rng() % alphabet.size()];
    std::vector<std::string> stops;
    const int k = 1 + static_cast<int>(rng() % 3);
    for (int s = 0; s < k; ++s) {
      std::string stop;
      const int len = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < len; ++i)
        stop += alphabet[rng() % alphabet.size()];
      stops.push_back(stop);
    }
    // Character by character: the first end position where a stop string
    // ends; the text before the longest one ending there.
    size_t first = std::string::npos;
    for (size_t end = 1; end <= text.size() && first == std::string::npos; ++end)
      for (const std::string &s : stops)
        if (s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0)
          first = std::min(first, end - s.size());
    const std::string want = first == std::string::npos ? text : text.substr(0, first);

    rt::StopStrings scan(stops);
    std::string got;
    size_t at = 0;
    while (at < text.size() && !scan.stopped()) {
      const size_t len = 1 + rng() % 5;
      got += scan.push(std::string_view(text).substr(at, len));
      at += len;
    }
    got += scan.finish();
    ASSERT_EQ(got, want) << "text " << text << " stops " << stops[0];
    ASSERT_EQ(scan.stopped(), first != std::string::npos) << text;
  }
}

} // namespace
} // namespace fm::test
