// Matcher and token masks on small vocabularies, against brute force (every token fed through
// the matcher), including tokens that end inside a UTF-8 character.
#include "fm/grammar.h"

#include <gtest/gtest.h>

#include <random>

namespace fm {
namespace {

Vocabulary smallVocab() {
  Vocabulary v;
  v.tokens = {"",      "{",   "}",   "\"",  "\":",  "\",\"", ":",  ",",   "[",      "]",
              "a",     "ab",  "abc", "b",   "c",    "caf",   "\xC3", "\xA9", "caf\xC3", "\xA9\"",
              "1",     "12",  "0",   "-",   ".",    "e",     " ",    "true", "nul",    "l",
              "null",  "\"a", "a\"", "\"}", "\"]",  "{\"",   "é",    "\xE2", "\x82\xAC", "x"};
  v.eos = {0};
  return v;
}

bool bit(const std::vector<uint32_t> &mask, int32_t t) { return (mask[size_t(t) >> 5] >> (t & 31)) & 1; }

// Random walks over the mask; at every step the mask must equal canAcceptToken for every token,
// and eos exactly isAccepting.
void checkWalks(const Grammar &g, int walks, uint64_t seed) {
  auto masker = TokenMasker::create(g, smallVocab());
  ASSERT_TRUE(masker) << masker.message();
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> mask(masker->maskWords());
  for (int w = 0; w < walks; ++w) {
    GrammarMatcher m(*masker);
    for (int step = 0; step < 60; ++step) {
      MaskInfo info = m.fillMask(mask.data());
      std::vector<int32_t> allowed;
      for (int32_t t = 0; t < masker->vocabSize(); ++t) {
        ASSERT_EQ(bit(mask, t), m.canAcceptToken(t)) << "walk " << w << " step " << step << " token " << t;
        if (bit(mask, t))
          allowed.push_back(t);
      }
      ASSERT_EQ(info.eosAllowed, m.isAccepting());
      ASSERT_EQ(info.allowed, int64_t(allowed.size()));
      if (allowed.empty())
        break; // only where nothing at all continues (never for a productive grammar)
      int32_t t = allowed[rng() % allowed.size()];
      ASSERT_TRUE(m.acceptToken(t));
      if (m.isFinished())
        break;
    }
  }
}

TEST(Engine, MasksEqualBruteForceForJson) {
  checkWalks(Grammar::anyJson(GrammarMode::Check), 30, 1);
  checkWalks(Grammar::anyJson(GrammarMode::Generate), 30, 2);
}

TEST(Engine, MasksEqualBruteForceForASchema) {
  auto g = Grammar::fromJsonSchema(
      R"J({"type":"object","properties":{"a":{"enum":["abc","caf\u00e9"]},"b":{"type":"array","items":{"type":"integer"},"maxItems":2}},"required":["a"]})J");
  ASSERT_TRUE(g) << g.message();
  checkWalks(*g, 40, 3);
}

TEST(Engine, MasksEqualBruteForceForGbnfAndRegex) {
  auto g = Grammar::fromGbnf("root ::= (\"ab\" | \"a\" [bc]* | \"caf\" [\\u00e9\\u20ac])+ (\",\" root)?\n");
  ASSERT_TRUE(g) << g.message();
  checkWalks(*g, 40, 4);
  auto r = Grammar::fromRegex("(a|b)*c?(1|12)+|caf\u00e9\"");
  ASSERT_TRUE(r) << r.message();
  checkWalks(*r, 40, 5);
}

TEST(Engine, TokensEndingInsideAUtf8Character) {
  auto g = Grammar::fromRegex("caf\u00e9\"");
  ASSERT_TRUE(g);
  auto masker = TokenMasker::create(*g, smallVocab());
  ASSERT_TRUE(masker);
  GrammarMatcher m(*masker);
  ASSERT_TRUE(m.acceptToken(18)); // "caf\xC3": ends between the two bytes of é
  std::vector<uint32_t> mask(masker->maskWords());
  MaskInfo info = m.fillMask(mask.data());
  EXPECT_TRUE(bit(mask, 17));  // "\xA9"
  EXPECT_TRUE(bit(mask, 19));  // "\xA9\""
  EXPECT_FALSE(bit(mask, 36)); // "é" would repeat the lead byte
  EXPECT_EQ(info.allowed, 2);
  EXPECT_FALSE(info.eosAllowed);
  ASSERT_TRUE(m.acceptToken(17));
  info = m.fillMask(mask.data());
  EXPECT_EQ(info.forced, 3); // only "\"" fits, and eos does not: fast-forward
  ASSERT_TRUE(m.acceptToken(3));
  info = m.fillMask(mask.data());
  EXPECT_TRUE(info.eosAllowed);
  EXPECT_EQ(info.allowed, 1);
  EXPECT_EQ(info.forced, -1); // eos is not a forced token
  EXPECT_TRUE(m.acceptToken(0));
  EXPECT_TRUE(m.isFinished());
  EXPECT_FALSE(m.acceptToken(10));
}

TEST(Engine, EosOnlyInAnAcceptingState) {
  auto g = Grammar::fromRegex("ab?");
  auto masker = TokenMasker::create(*g, smallVocab());
  GrammarMatcher m(*masker);
  EXPECT_FALSE(m.acceptToken(0));
  EXPECT_TRUE(m.acceptToken(10));
  EXPECT_TRUE(m.isAccepting());
  EXPECT_TRUE(m.canAcceptToken(0));
  EXPECT_TRUE(m.acceptToken(13));
  EXPECT_FALSE(m.canAcceptToken(13));
  EXPECT_TRUE(m.acceptToken(0));
}

TEST(Engine, RefusedInputLeavesTheStateAndReportsWhere) {
  auto g = Grammar::fromJsonSchema(R"J({"type":"object","properties":{"n":{"type":"integer"}}})J",
                                   GrammarMode::Check);
  ASSERT_TRUE(g);
  GrammarMatcher m(*g);
  EXPECT_EQ(m.acceptBytes("{\"n\": 1x}"), 7u);
  EXPECT_NE(m.describeExpected().find("'}'"), std::string::npos) << m.describeExpected();
  EXPECT_EQ(m.acceptBytes("}"), 1u);
  EXPECT_TRUE(m.isAccepting());
}

TEST(Engine, ForcedBytesFollowTheOnlyPath) {
  auto g = Grammar::fromJsonSchema(
      R"J({"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"integer"}},"required":["kind","r"]})J");
  ASSERT_TRUE(g);
  GrammarMatcher m(*g);
  EXPECT_EQ(m.forcedBytes(), "{\"kind\":\"circle\",\"r\":");
  EXPECT_EQ(m.acceptBytes("{\"kind\":\"circle\",\"r\":4"), 22u);
  EXPECT_EQ(m.forcedBytes(), ""); // more digits or '}'
}

TEST(Engine, EmptyGrammarIsDead) {
  auto g = Grammar::fromJsonSchema("false");
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->isEmpty());
  GrammarMatcher m(*g);
  EXPECT_TRUE(m.isDead());
  EXPECT_FALSE(m.isAccepting());
}

TEST(Engine, DeepNestingRunsInBoundedNativeStack) {
  std::string deep(100000, '[');
  GrammarMatcher m(Grammar::anyJson(GrammarMode::Check));
  EXPECT_EQ(m.acceptBytes(deep), deep.size());
  EXPECT_FALSE(m.isAccepting());
  EXPECT_EQ(m.acceptBytes(std::string(100000, ']')), 100000u);
  EXPECT_TRUE(m.isAccepting());
}

} // namespace
} // namespace fm
