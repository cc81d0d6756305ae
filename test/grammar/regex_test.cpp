// The regex compiler against std::regex (ECMAScript grammar, an independent implementation) on
// ASCII strings, plus what is refused and where.
#include "grammar/Regex.h"

#include "fm/grammar.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>

namespace fm::grammar {
namespace {

std::u32string wide(const std::string &s) { return std::u32string(s.begin(), s.end()); }

TEST(Regex, AgreesWithStdRegex) {
  const char *patterns[] = {
      "a*b", "(ab|a)*c?", "[a-c]{2,3}", "a{2}", "a{1,}b", "^ab$", "ab|^c", "b$|a",
      "[^a]+", "\\d+(\\.\\d{1,2})?", "\\w*-\\w*", "(a|)b", "(?:a|b)+?", ".a.", "[\\d\\s]+",
      "x?y*z+", "[a-]b", "\\.", "(a*)*b", "(a?){3}", "\\W", "a|b|c|", "0{0}1",
  };
  const std::string alphabet = "abc01-_ .\nxyz";
  std::mt19937 rng(7);
  for (const char *p : patterns) {
    auto full = compileRegex(p, RegexMode::FullMatch);
    auto search = compileRegex(p, RegexMode::Search);
    ASSERT_TRUE(full) << p << ": " << full.message();
    ASSERT_TRUE(search) << p;
    std::regex ref(p, std::regex::ECMAScript);
    for (int k = 0; k < 400; ++k) {
      std::string s;
      for (size_t n = rng() % 7; n > 0; --n)
        s += alphabet[rng() % alphabet.size()];
      std::string pat = p;
      // ^ and $ make "full match" of an anchored alternative the same as regex_match of it.
      EXPECT_EQ(nfaMatches(*search, wide(s)), std::regex_search(s, ref)) << p << " search " << s;
      if (pat.find('^') == std::string::npos && pat.find('$') == std::string::npos)
        EXPECT_EQ(nfaMatches(*full, wide(s)), std::regex_match(s, ref)) << p << " full " << s;
    }
  }
}

TEST(Regex, EmptyAndFullClasses) {
  // ECMA-262: [] matches nothing and [^] any character (libstdc++ refuses both).
  auto none = compileRegex("a[]", RegexMode::FullMatch);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->emptyLanguage());
  auto any = compileRegex("[^]", RegexMode::FullMatch);
  ASSERT_TRUE(any);
  EXPECT_TRUE(nfaMatches(*any, U"\n"));
  EXPECT_FALSE(nfaMatches(*any, U""));
}

TEST(Regex, UnicodeEscapesAndClasses) {
  auto r = compileRegex("^\\u00e9\\u{1F4A9}[\\u4e00-\\u9fff]\\uD83D\\uDE00.$", RegexMode::Search);
  ASSERT_TRUE(r) << r.message();
  EXPECT_TRUE(nfaMatches(*r, U"\u00e9\U0001F4A9\u4e2d\U0001F600x"));
  EXPECT_FALSE(nfaMatches(*r, U"\u00e9\U0001F4A9\u4e2d\U0001F600\n"));
  auto s = compileRegex("\\s", RegexMode::FullMatch);
  EXPECT_TRUE(nfaMatches(*s, U"\u00a0"));
  EXPECT_TRUE(nfaMatches(*s, U"\ufeff"));
}

TEST(Regex, RefusedWithTheOffset) {
  struct Case {
    const char *pattern, *message;
  } cases[] = {
      {"a(?=b)", "at offset 1: lookahead (?= is not supported"},
      {"(?<!a)b", "at offset 0: lookbehind (?<! is not supported"},
      {"(a)\\1", "at offset 3: backreference \\1 is not supported"},
      {"\\bword", "at offset 0: word boundary \\b is not supported"},
      {"ab(c", "at offset 2: unterminated group '('"},
      {"ab)", "at offset 2: unmatched ')'"},
      {"*a", "at offset 0: nothing to repeat"},
      {"a**", "at offset 2: nothing to repeat"},
      {"a?{4}", "at offset 2: nothing to repeat"},
      {"[b-a]", "at offset 2: range out of order"},
      {"a^b", "at offset 1: ^ is supported only at the start/end"},
      {"\\p{L}", "at offset 0: Unicode property escapes"},
      {"a{2000}", "repetition count above 1000"},
  };
  for (const Case &c : cases) {
    auto r = compileRegex(c.pattern, RegexMode::Search);
    ASSERT_FALSE(r) << c.pattern;
    EXPECT_NE(r.message().find(c.message), std::string::npos) << c.pattern << " -> " << r.message();
  }
}

} // namespace
} // namespace fm::grammar
