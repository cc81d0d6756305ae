// The grammar builder's checks: left recursion, unproductive rules, repetition shapes.
#include "grammar/Cfg.h"

#include "fm/grammar.h"

#include <gtest/gtest.h>

namespace fm::grammar {
namespace {

TEST(Cfg, LeftRecursionIsRefusedWithTheCycle) {
  Cfg cfg;
  int32_t a = cfg.addRule("a"), b = cfg.addRule("b");
  cfg.addAlt(a, {b, cfg.byte('x')});
  cfg.addAlt(b, {cfg.empty(), a}); // hidden behind a nullable symbol
  cfg.addAlt(b, {cfg.byte('y')});
  cfg.root = a;
  auto g = compileCfg(cfg, "test");
  ASSERT_FALSE(g);
  EXPECT_NE(g.message().find("left recursion"), std::string::npos) << g.message();
  EXPECT_NE(g.message().find("'a'"), std::string::npos) << g.message();
}

TEST(Cfg, UnproductiveAlternativesAreDroppedAndAnEmptyRootIsEmpty) {
  Cfg cfg;
  int32_t root = cfg.addRule("root"), loop = cfg.addRule("loop");
  cfg.addAlt(loop, {cfg.byte('a'), loop}); // never ends
  cfg.addAlt(root, {loop});
  cfg.addAlt(root, {cfg.byte('b')});
  cfg.root = root;
  auto g = compileCfg(cfg, "test");
  ASSERT_TRUE(g) << g.message();
  EXPECT_FALSE(g->empty);
  Cfg none;
  none.root = none.addRule("root");
  none.addAlt(none.root, {none.nothing()});
  auto e = compileCfg(none, "test");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->empty);
}

TEST(Cfg, RepeatBoundsAreExact) {
  auto g = Grammar::fromGbnf("root ::= \"a\"{2,4} \"b\"* \"c\"{3}\n");
  ASSERT_TRUE(g) << g.message();
  auto match = [&](const std::string &s) {
    GrammarMatcher m(*g);
    return m.acceptBytes(s) == s.size() && m.isAccepting();
  };
  EXPECT_FALSE(match("accc"));
  EXPECT_TRUE(match("aaccc"));
  EXPECT_TRUE(match("aaaabbbbccc"));
  EXPECT_FALSE(match("aaaaaccc"));
  EXPECT_FALSE(match("aacc"));
}

} // namespace
} // namespace fm::grammar
