// Numeric bounds as regular languages, against exact integer arithmetic on scaled values.
#include "grammar/NumberRange.h"
#include "grammar/Regex.h"

#include "fm/grammar.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace fm::grammar {
namespace {

// A random decimal spelling (no exponent) and its value times 10^4.
std::string spell(std::mt19937 &rng, int64_t *scaled) {
  int64_t ip = rng() % 4 == 0 ? 0 : int64_t(rng() % (rng() % 2 ? 20 : 100000));
  int fracDigits = int(rng() % 5);
  std::string frac;
  int64_t fv = 0;
  for (int k = 0; k < 4; ++k) {
    int d = k < fracDigits ? int(rng() % 10) : 0;
    if (k < fracDigits)
      frac += char('0' + d);
    fv = fv * 10 + d;
  }
  bool neg = rng() % 2;
  std::string s = (neg ? "-" : "") + std::to_string(ip) + (frac.empty() ? "" : "." + frac);
  if (rng() % 5 == 0 && !frac.empty())
    s += "00"; // trailing zeros change nothing
  *scaled = (neg ? -1 : 1) * (ip * 10000 + fv);
  return s;
}

TEST(NumberRange, BoundsAgreeWithArithmetic) {
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    int64_t b;
    std::string bs = spell(rng, &b);
    Decimal bound;
    ASSERT_TRUE(Decimal::parse(bs, &bound)) << bs;
    bool exclusive = rng() % 2, lower = rng() % 2;
    std::string re = lower ? atLeastRegex(bound, exclusive) : atMostRegex(bound, exclusive);
    auto nfa = compileRegex(re, RegexMode::FullMatch);
    ASSERT_TRUE(nfa) << re << ": " << nfa.message();
    for (int k = 0; k < 60; ++k) {
      int64_t x;
      std::string xs = k == 0 ? bs : spell(rng, &x);
      if (k == 0)
        x = b;
      bool want = lower ? (exclusive ? x > b : x >= b) : (exclusive ? x < b : x <= b);
      EXPECT_EQ(nfaMatches(*nfa, std::u32string(xs.begin(), xs.end())), want)
          << xs << (lower ? " >" : " <") << (exclusive ? "" : "=") << " " << bs;
      Decimal d;
      ASSERT_TRUE(Decimal::parse(xs, &d));
      int c = compareDecimal(d, bound);
      EXPECT_EQ(c, x < b ? -1 : x > b ? 1 : 0) << xs << " vs " << bs;
    }
  }
}

TEST(NumberRange, IntegerSchemasAcceptIntegralSpellingsInCheckMode) {
  auto g = Grammar::fromJsonSchema(R"J({"type":"integer","minimum":-2,"exclusiveMaximum":300})J",
                                   GrammarMode::Check);
  ASSERT_TRUE(g) << g.message();
  auto ok = [&](const std::string &s) {
    GrammarMatcher m(*g);
    return m.acceptBytes(s) == s.size() && m.isAccepting();
  };
  for (const char *yes : {"-2", "-2.0", "0", "-0", "299", "299.000", "1.0"})
    EXPECT_TRUE(ok(yes)) << yes;
  for (const char *no : {"-3", "300", "300.0", "299.5", "-2.0001", "1.5", "01"})
    EXPECT_FALSE(ok(no)) << no;
  auto gen = Grammar::fromJsonSchema(R"J({"type":"integer","minimum":-2,"exclusiveMaximum":300})J");
  GrammarMatcher m(*gen);
  EXPECT_EQ(m.acceptBytes("1.0"), 1u); // generation writes integers without a fraction
}

TEST(NumberRange, EqualSpellings) {
  Decimal d;
  ASSERT_TRUE(Decimal::parse("1.50", &d));
  auto nfa = compileRegex(numberEqualRegex(d), RegexMode::FullMatch);
  ASSERT_TRUE(nfa);
  for (const char *yes : {"1.5", "1.50", "1.500"})
    EXPECT_TRUE(nfaMatches(*nfa, std::u32string(yes, yes + strlen(yes)))) << yes;
  for (const char *no : {"1", "1.05", "-1.5", "15"})
    EXPECT_FALSE(nfaMatches(*nfa, std::u32string(no, no + strlen(no)))) << no;
}

} // namespace
} // namespace fm::grammar
