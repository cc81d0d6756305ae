// fm::GuidedDecoder and fm::ToolCallDecoder over a toy vocabulary with random logits and the
// real sampler: masks against a brute-force check of every token, outputs against a plain
// regex, forced tokens, end-of-sequence only when complete; fm::parseTools and its errors.
#include "ToyVocab.h"

#include "fm/guided.h"
#include "fm/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace fm {
namespace {

using test::kToyEos;
using test::toyComplete;
using test::toySchema;
using test::toyVocabulary;

TokenMasker toyMasker(const char *schema) {
  auto g = Grammar::fromJsonSchema(schema);
  EXPECT_TRUE(g) << g.message();
  auto m = TokenMasker::create(*g, toyVocabulary());
  EXPECT_TRUE(m) << m.message();
  return std::move(*m);
}

std::vector<float> randomLogits(std::mt19937_64 &rng, size_t n) {
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> l(n);
  for (float &x : l)
    x = d(rng);
  return l;
}

TEST(Guided, MasksMatchEveryTokenAndOutputsMatchTheReference) {
  TokenMasker masker = toyMasker(toySchema());
  const Vocabulary vocab = toyVocabulary();
  const int64_t n = int64_t(vocab.tokens.size());
  int forcedSeen = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    Sampler sampler(1.0f, 0, 1.0f, seed);
    GuidedDecoder dec(masker);
    // The reference: a byte-level matcher of the same grammar, fed the text so far.
    auto g = Grammar::fromJsonSchema(toySchema());
    ASSERT_TRUE(g);
    std::string text;
    int steps = 0;
    while (!dec.finished()) {
      ASSERT_LT(++steps, 200);
      std::vector<float> logits = randomLogits(rng, size_t(n)), orig = logits;
      auto step = dec.process(logits.data(), n);
      ASSERT_TRUE(step) << step.message();
      ASSERT_FALSE(step->stop);
      int allowed = 0, lastAllowed = -1;
      for (int32_t t = 0; t < n; ++t) {
        bool want;
        if (t == kToyEos) {
          want = toyComplete(text);
        } else {
          GrammarMatcher ref(*g);
          const std::string &b = vocab.tokens[size_t(t)];
          want = !b.empty() && ref.acceptBytes(text + b) == text.size() + b.size();
        }
        if (step->forced < 0) {
          ASSERT_EQ(std::isfinite(logits[size_t(t)]), want) << "token " << t << " after " << text;
          if (want)
            ASSERT_EQ(logits[size_t(t)], orig[size_t(t)]); // allowed logits are untouched
        }
        if (want) {
          ++allowed;
          lastAllowed = t;
        }
      }
      ASSERT_GT(allowed, 0) << text;
      int32_t token;
      if (step->forced >= 0) {
        // Forced: the only token allowed, or eos when the text is complete and nothing else fits.
        if (step->forced == kToyEos)
          EXPECT_TRUE(toyComplete(text)) << text;
        else
          EXPECT_EQ(allowed, 1) << text;
        EXPECT_EQ(step->forced, lastAllowed);
        token = step->forced;
        ++forcedSeen;
      } else {
        EXPECT_GT(allowed, 1) << text;
        token = sampler.sample(logits.data(), n);
      }
      ASSERT_TRUE(dec.accept(token)) << "token " << token;
      if (token != kToyEos)
        text += vocab.tokens[size_t(token)];
      EXPECT_EQ(dec.text(), text);
    }
    EXPECT_TRUE(toyComplete(text)) << text;
    EXPECT_TRUE(dec.isComplete());
    // After eos: nothing more.
    std::vector<float> logits(size_t(n), 0.0f);
    auto after = dec.process(logits.data(), n);
    ASSERT_TRUE(after);
    EXPECT_TRUE(after->stop);
  }
  EXPECT_GT(forcedSeen, 40); // at least the closing eos of every run, and '{' / ',' pieces
}

TEST(Guided, CompleteTextForcesEndOfSequence) {
  // {"a": {"const": 7}}: after `{"a":7}` only eos fits, so it is forced, not sampled.
  TokenMasker masker = toyMasker(R"({"type":"object","properties":{"a":{"const":7}},"required":["a"]})");
  GuidedDecoder dec(masker);
  std::vector<float> logits(40);
  std::vector<int32_t> taken;
  while (!dec.finished()) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    auto step = dec.process(logits.data(), 40);
    ASSERT_TRUE(step) << step.message();
    if (step->forced < 0) {
      // A choice: take the first allowed token.
      int32_t t = 0;
      while (!std::isfinite(logits[size_t(t)]))
        ++t;
      taken.push_back(t);
    } else {
      taken.push_back(step->forced);
    }
    ASSERT_TRUE(dec.accept(taken.back()));
    ASSERT_LT(taken.size(), 20u);
  }
  EXPECT_EQ(dec.text(), "{\"a\":7}");
  EXPECT_EQ(taken.back(), kToyEos);
  EXPECT_GE(dec.forcedTokens(), 2);
}

TEST(Guided, ErrorsNameTheProblem) {
  TokenMasker masker = toyMasker(toySchema());
  GuidedDecoder dec(masker);
  std::vector<float> logits(41);
  auto step = dec.process(logits.data(), 41);
  ASSERT_FALSE(step);
  EXPECT_NE(step.message().find("41 logits"), std::string::npos) << step.message();
  // A token the grammar refuses: the message says what it wanted.
  Status s = dec.accept(2); // '}' before '{'
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("'}'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("expects '{'"), std::string::npos) << s.message();
  EXPECT_FALSE(dec.accept(kToyEos)); // eos before the text is complete
  EXPECT_FALSE(dec.accept(38));      // a special token without bytes
  EXPECT_FALSE(dec.accept(40));      // outside the vocabulary
  EXPECT_TRUE(dec.accept(21));       // `{"`: the state is unchanged by the refusals
  EXPECT_EQ(dec.text(), "{\"");
}

TEST(Guided, StopsWhenCompleteWithoutAnEosId) {
  Vocabulary v = toyVocabulary();
  v.eos.clear();
  auto g = Grammar::fromRegex("ab");
  ASSERT_TRUE(g);
  auto m = TokenMasker::create(*g, v);
  ASSERT_TRUE(m);
  GuidedDecoder dec(*m);
  std::vector<float> logits(40, 0.0f);
  auto step = dec.process(logits.data(), 40);
  ASSERT_TRUE(step);
  ASSERT_FALSE(step->stop);
  ASSERT_TRUE(dec.accept(39)); // "ab"
  step = dec.process(logits.data(), 40);
  ASSERT_TRUE(step);
  EXPECT_TRUE(step->stop);
  EXPECT_TRUE(dec.isComplete());
  EXPECT_FALSE(dec.finished());
}

// -- tools ------------------------------------------------------------------------------------

const char *kTools = R"([
  {"type": "function", "function": {"name": "ab", "description": "d",
    "parameters": {"type": "object", "properties": {"a": {"$ref": "#/$defs/small"}},
                   "required": ["a"], "$defs": {"small": {"type": "integer", "minimum": 0, "maximum": 9}}}}},
  {"name": "yy", "parameters": {"type": "object", "properties": {"b": {"enum": ["x"]}}, "required": ["b"],
                                "additionalProperties": false}},
  {"type": "function", "function": {"name": "z"}}
])";

TEST(Tools, CallSchemaAcceptsExactlyTheCallsOfTheTools) {
  auto set = parseTools(kTools, "tools.json");
  ASSERT_TRUE(set) << set.message();
  EXPECT_EQ(set->names, (std::vector<std::string>{"ab", "yy", "z"}));
  auto g = Grammar::fromJsonSchema(set->callSchema, GrammarMode::Check);
  ASSERT_TRUE(g) << g.message() << "\n" << set->callSchema;
  auto matches = [&](const std::string &text) {
    GrammarMatcher m(*g);
    return m.acceptBytes(text) == text.size() && m.isAccepting();
  };
  EXPECT_TRUE(matches(R"({"name":"ab","arguments":{"a":3}})"));
  EXPECT_TRUE(matches(R"({"arguments": {"b": "x"}, "name": "yy"})"));
  EXPECT_TRUE(matches(R"({"name":"z","arguments":{}})"));
  EXPECT_FALSE(matches(R"({"name":"ab","arguments":{"a":10}})")); // the $ref'd bound
  EXPECT_FALSE(matches(R"({"name":"ab","arguments":{"b":"x"}})"));
  EXPECT_FALSE(matches(R"({"name":"yy","arguments":{"b":"x","c":1}})"));
  EXPECT_FALSE(matches(R"({"name":"z","arguments":{"q":1}})"));
  EXPECT_FALSE(matches(R"({"name":"nope","arguments":{}})"));
  EXPECT_FALSE(matches(R"({"name":"z"})"));
  EXPECT_FALSE(matches(R"({"name":"z","arguments":{},"extra":1})"));
}

TEST(Tools, BadToolsNameTheFileAndPointer) {
  struct Case {
    const char *json, *want;
  } cases[] = {
      {"[", "tools.json: line 1, column 2"},
      {"{}", "tools.json: (root): expected a list of tools"},
      {"[]", "the list of tools is empty"},
      {"[3]", "tools.json: /0: expected a tool object"},
      {R"([{"type":"retrieval"}])", "/0/type: only \"function\" tools"},
      {R"([{"type":"function"}])", "/0: a \"function\" tool needs a \"function\" object"},
      {R"([{"function":{"description":"x"}}])", "/0/function: a tool needs a \"name\""},
      {R"([{"name":""}])", "/0/name: expected a non-empty string"},
      {R"([{"name":"a"},{"name":"a"}])", "/1/name: tool 'a' is listed twice"},
      {R"({"tools":[{"name":"a","parameters":3}]})", "/tools/0/parameters: expected a JSON Schema"},
  };
  for (const Case &c : cases) {
    auto set = parseTools(c.json, "tools.json");
    ASSERT_FALSE(set) << c.json;
    EXPECT_NE(set.message().find(c.want), std::string::npos) << c.json << " -> " << set.message();
  }
  // A parameter schema the compiler refuses: said in terms of the tools file.
  auto set = parseTools(R"([{"name":"a"},{"name":"b","parameters":{"type":"object","minProperties":1}}])",
                        "tools.json");
  ASSERT_TRUE(set) << set.message();
  auto g = Grammar::fromJsonSchema(set->callSchema);
  ASSERT_FALSE(g);
  std::string msg = toolSchemaMessage(*set, "tools.json", g.message());
  EXPECT_NE(msg.find("tools.json: /1/parameters"), std::string::npos) << msg;
  EXPECT_NE(msg.find("minProperties"), std::string::npos) << msg;
}

// Drives a ToolCallDecoder: `script` tokens are taken while the decoder leaves the choice free
// (no forced token); past the script, the sampler draws from the masked logits.
// The toy vocabulary plus the letters of "arguments": a mask admits each token that fits, so a
// vocabulary must be able to finish every word it can start (real ones spell every byte).
Vocabulary toolVocabulary() {
  Vocabulary v = toyVocabulary();
  for (const char *letter : {"r", "g", "u", "m", "e", "n", "t", "s"})
    v.tokens.push_back(letter);
  return v;
}
constexpr int64_t kToolVocab = 48;

std::vector<int32_t> drive(ToolCallDecoder &dec, const std::vector<int32_t> &script,
                           uint64_t seed) {
  std::mt19937_64 rng(seed);
  Sampler sampler(1.0f, 0, 1.0f, seed);
  std::vector<int32_t> taken;
  size_t next = 0;
  while (!dec.finished() && taken.size() < 100) {
    std::vector<float> logits = randomLogits(rng, kToolVocab);
    auto step = dec.process(logits.data(), kToolVocab);
    EXPECT_TRUE(step) << step.message();
    if (!step || step->stop)
      break;
    int32_t t = step->forced;
    if (t < 0)
      t = next < script.size() ? script[next++] : sampler.sample(logits.data(), kToolVocab);
    EXPECT_TRUE(std::isfinite(logits[size_t(t)]) || step->forced >= 0) << "masked token " << t;
    Status s = dec.accept(t);
    EXPECT_TRUE(s) << s.message();
    if (!s)
      break;
    taken.push_back(t);
  }
  return taken;
}

TokenMasker toolMasker() {
  auto set = parseTools(R"([{"name":"ab","parameters":{"type":"object","properties":{"a":{"type":"integer","minimum":0,"maximum":99}},"required":["a"]}}])",
                        "tools.json");
  EXPECT_TRUE(set) << set.message();
  auto g = Grammar::fromJsonSchema(set->callSchema);
  EXPECT_TRUE(g) << g.message();
  auto m = TokenMasker::create(*g, toolVocabulary());
  EXPECT_TRUE(m) << m.message();
  return std::move(*m);
}

bool isCall(const std::string &text) {
  static const std::regex re(R"(\{"name":"ab","arguments":\{"a":(0|[1-9][0-9]?)\}\})");
  return std::regex_match(text, re);
}

TEST(Tools, AutoIsFreeUntilTheBareJsonOpener) {
  TokenMasker masker = toolMasker();
  for (uint64_t seed = 0; seed < 10; ++seed) {
    SCOPED_TRACE(seed);
    ToolCallDecoder dec(masker, ToolCallSyntax{}, ToolChoice::Auto); // opener `{"name"`
    // Free text: tokens the call grammar would refuse first ('z', ' ', '}') pass unmasked;
    // then `{"` `name` `"` opens the call, which the grammar completes.
    std::vector<int32_t> taken = drive(dec, {27, 26, 2, 21, 33, 3}, seed);
    ASSERT_GE(taken.size(), 7u);
    EXPECT_EQ(dec.freeText(), "z }");
    EXPECT_TRUE(dec.inCall());
    EXPECT_TRUE(dec.callComplete());
    EXPECT_TRUE(dec.finished());
    EXPECT_TRUE(isCall(dec.callText())) << dec.callText();
  }
}

TEST(Tools, AutoEndsAtEosInFreeText) {
  TokenMasker masker = toolMasker();
  ToolCallDecoder dec(masker, ToolCallSyntax{}, ToolChoice::Auto);
  std::vector<int32_t> taken = drive(dec, {6, 7, 26, kToyEos}, 1);
  EXPECT_EQ(taken, (std::vector<int32_t>{6, 7, 26, kToyEos}));
  EXPECT_TRUE(dec.finished());
  EXPECT_FALSE(dec.inCall());
  EXPECT_EQ(dec.freeText(), "ab ");
}

TEST(Tools, RequiredForcesTheMarkerThenConstrainsTheCall) {
  TokenMasker masker = toolMasker();
  ToolCallSyntax syntax;
  syntax.opener = "[";         // stands for a marker token such as <tool_call>
  syntax.openerIsCall = false;
  syntax.openerTokens = {28};  // "["
  syntax.afterOpener = {37};   // "\n"
  for (uint64_t seed = 0; seed < 10; ++seed) {
    ToolCallDecoder dec(masker, syntax, ToolChoice::Required);
    std::vector<int32_t> taken = drive(dec, {}, seed);
    ASSERT_GE(taken.size(), 3u);
    EXPECT_EQ(taken[0], 28);
    EXPECT_EQ(taken[1], 37);
    EXPECT_TRUE(isCall(dec.callText())) << dec.callText();
    EXPECT_TRUE(dec.finished());
    EXPECT_EQ(taken.back(), kToyEos);
  }
  // Auto with the marker: free text, then the marker, then the forced newline and the call.
  ToolCallDecoder dec(masker, syntax, ToolChoice::Auto);
  std::vector<int32_t> taken = drive(dec, {27, 28}, 3);
  ASSERT_GE(taken.size(), 4u);
  EXPECT_EQ(taken[2], 37);
  EXPECT_EQ(dec.freeText(), "z");
  EXPECT_TRUE(isCall(dec.callText())) << dec.callText();
}

} // namespace
} // namespace fm
