// GBNF (llama.cpp syntax): what parses, what matches, and errors with line:column.
#include "fm/grammar.h"
#include "grammar/Engine.h"

#include <gtest/gtest.h>

namespace fm {
namespace {

bool full(const Grammar &g, const std::string &s) {
  GrammarMatcher m(g);
  return m.acceptBytes(s) == s.size() && m.isAccepting();
}

// llama.cpp's grammars/arithmetic.gbnf, comments and continuation lines included.
const char *kArithmetic = R"G(root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*   # optional whitespace
)G";

TEST(Gbnf, LlamaCppArithmetic) {
  auto g = Grammar::fromGbnf(kArithmetic);
  ASSERT_TRUE(g) << g.message();
  EXPECT_TRUE(full(*g, "1+2=3\n"));
  EXPECT_TRUE(full(*g, "(a_1 *2)=x\nb=4\n"));
  EXPECT_FALSE(full(*g, "1+=3\n"));
  EXPECT_FALSE(full(*g, "1+2=3"));
}

TEST(Gbnf, EscapesClassesAnyAndRepetition) {
  auto g = Grammar::fromGbnf(
      "root ::= \"\\x41\\u00e9\\t\" [^\\n\"]{2,3} . (\n  \"a\" |\n  \"b\"\n)? [\\u4e00-\\u9fff]\n");
  ASSERT_TRUE(g) << g.message();
  EXPECT_TRUE(full(*g, "A\u00e9\txyz\u00e9a\u4e2d"));
  EXPECT_TRUE(full(*g, "A\u00e9\txy!\u4e2d"));
  EXPECT_FALSE(full(*g, "A\u00e9\tx\n!\u4e2d"));
  EXPECT_FALSE(full(*g, "A\u00e9\txyzw!\u4e2d"));
}

// An exponentially ambiguous grammar (found by fuzz.grammar_gbnf: a 130-byte text ran the
// matcher for minutes) stops at the live-stack cap with a reason, instead of hanging.
TEST(Gbnf, ExponentialAmbiguityStopsWithAReason) {
  const char *text = "root ::= (expr \"=\" ws term \"\\n\")+\n"
                     "expr ::=.term ([-string+*/] term)*\n"
                     "term ::= [a-z]+ | [0-9]+ | \"(\" |  expr \")\"\n"
                     "ws ::= [ \\t]*\n";
  auto g = Grammar::fromGbnf(text);
  ASSERT_TRUE(g) << g.message();
  GrammarMatcher m(*g);
  std::string input(text);
  size_t consumed = m.acceptBytes(input);
  // The 4096-stack cap is reached at byte 37; a cap 1000x larger would only stop it after
  // seconds, past byte 48.
  EXPECT_LT(consumed, 48u);
  EXPECT_NE(m.describeExpected().find("too ambiguous"), std::string::npos) << m.describeExpected();
}

// Nested repetitions multiply the live parses at each byte until the cap kills the set. The
// mask, a union over the parses cached per parse, cannot see that: it may allow a token that
// acceptToken then refuses, but only with isTooAmbiguous() and the reason in the error (found by
// fuzz.grammar_gbnf). Everywhere before the cap the mask is exact; 120 levels stay fast (the
// closure stops at the cap, it does not finish an exponential closure first).
TEST(Gbnf, MaskAgreesWithTheMatcherUpToTheStackCap) {
  for (int levels : {9, 120}) {
    auto g = Grammar::fromGbnf("root ::= ." + std::string(size_t(levels), '+'));
    ASSERT_TRUE(g) << g.message();
    Vocabulary vocab;
    vocab.tokens = {"", "a", "ab", "abc", "\xC3\xA9", "."};
    vocab.eos = {0};
    auto masker = TokenMasker::create(*g, vocab);
    ASSERT_TRUE(masker) << masker.message();
    GrammarMatcher m(*masker);
    std::vector<uint32_t> mask(masker->maskWords());
    size_t steps = 0;
    for (; steps < 16; ++steps) {
      m.fillMask(mask.data());
      // A token the mask leaves out is refused; one it allows is accepted, or it is a feed
      // past the cap (checked below, by feeding it).
      bool refused = false;
      for (int32_t t = 1; t < masker->vocabSize(); ++t) {
        bool allowed = (mask[size_t(t) >> 5] >> (t & 31)) & 1;
        if (!allowed)
          EXPECT_FALSE(m.canAcceptToken(t)) << "token " << t << " at step " << steps;
        refused = refused || !m.canAcceptToken(t);
      }
      if (refused)
        break;
      EXPECT_FALSE(m.isTooAmbiguous());
      ASSERT_TRUE(m.acceptToken(1));
    }
    EXPECT_LT(steps, 16u) << levels;
    EXPECT_FALSE(m.isTooAmbiguous());
    EXPECT_FALSE(m.acceptToken(3)); // "abc": one byte passes the cap
    EXPECT_TRUE(m.isTooAmbiguous()) << levels;
    EXPECT_NE(m.describeExpected().find("too ambiguous"), std::string::npos)
        << m.describeExpected();
  }
}

// The step that passes the cap stops there: at 120 nested + it creates ~9,300 frames; finishing
// its closure first (then checking the cap) created ~640,000, and deeper nesting grows that
// exponentially (the fuzzer's 120-level input ran past its 10 s timeout).
TEST(Gbnf, TheStepPastTheCapStopsAtTheCap) {
  auto g = Grammar::fromGbnf("root ::= ." + std::string(120, '+'));
  ASSERT_TRUE(g) << g.message();
  grammar::StackArena arena;
  grammar::Engine engine(g->compiled(), arena);
  grammar::StackSet a, b;
  engine.initial(a);
  size_t steps = 0;
  for (; steps < 16 && !a.overflow; ++steps) {
    const size_t before = arena.size();
    engine.step(a, 'a', b);
    std::swap(a, b);
    if (a.overflow)
      EXPECT_LT(arena.size() - before, 16 * grammar::Engine::kMaxLiveStacks)
          << "frames made by the step past the cap";
  }
  EXPECT_TRUE(a.overflow) << "the cap is reached within " << steps << " bytes";
}

TEST(Gbnf, ErrorsNameLineAndColumn) {
  struct Case {
    const char *text, *message;
  } cases[] = {
      {"root ::= foo\n", "1:10: undefined rule 'foo'"},
      {"root ::= \"a\"\nx = \"b\"\n", "2:3: expected '::=' after rule name 'x'"},
      {"root ::= \"abc\n", "1:10: unterminated literal"},
      {"root ::= \"\\q\"\n", "1:11: unknown escape \\q"},
      {"root ::= [ab\n", "1:10: unterminated character class"},
      {"root ::= (\"a\"\n", "1:10: expected ')' to close this group"},
      {"root ::= * \"a\"\n", "1:10: nothing before '*' to repeat"},
      {"root ::= <think>\n", "1:10: token references <...> are not supported"},
      {"x ::= \"a\"\n", "no 'root' rule"},
      {"root ::= \"a\"\nroot ::= \"b\"\n", "2:1: rule 'root' is defined twice"},
      {"root ::= \"a\"{3,1}\n", "1:13: repetition {m,n} with n < m"},
  };
  for (const Case &c : cases) {
    auto g = Grammar::fromGbnf(c.text);
    ASSERT_FALSE(g) << c.text;
    EXPECT_NE(g.message().find(c.message), std::string::npos) << c.text << " -> " << g.message();
  }
}

} // namespace
} // namespace fm
