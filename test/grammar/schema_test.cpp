// JSON Schema compilation: errors that name the keyword and pointer, Generate's canonical form,
// Check's leniency, and the formats against reference date/time arithmetic.
#include "fm/grammar.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace fm {
namespace {

bool full(const Grammar &g, const std::string &s) {
  GrammarMatcher m(g);
  return m.acceptBytes(s) == s.size() && m.isAccepting();
}

Grammar compile(const std::string &schema, GrammarMode mode) {
  auto g = Grammar::fromJsonSchema(schema, mode);
  EXPECT_TRUE(g) << schema << ": " << g.message();
  return g ? *g : Grammar::anyJson();
}

TEST(Schema, ErrorsNameTheKeywordAndPointer) {
  struct Case {
    const char *schema, *message;
  } cases[] = {
      {R"J({"properties":{"a":{"multipleOf":2}}})J", "schema /properties/a/multipleOf: unsupported keyword 'multipleOf'"},
      {R"J({"items":[{}]})J", "schema /items: 'items' as an array is draft 7"},
      {R"J({"format":"email"})J", "schema /format: format 'email' is not supported"},
      {R"J({"pattern":"a(?=b)"})J", "schema /pattern: regex: at offset 1: lookahead"},
      {R"J({"$ref":"http://x/y"})J", "remote $ref 'http://x/y' is not supported"},
      {R"J({"$ref":"#/$defs/missing"})J", "$ref '#/$defs/missing' points at nothing"},
      {R"J({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})J", "$ref cycle"},
      {R"J({"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"})J", "infinite intersection"},
      {R"J({"type":"strin"})J", "schema /type: unknown type 'strin'"},
      {R"J({"minLength":-1})J", "schema /minLength: must be a non-negative integer"},
      {R"J({"$defs":{"x":{"if":true}}})J", "schema /$defs/x/if: unsupported keyword 'if'"},
      {"{\"type\":\n \"string\",}", "schema: line 2, column 11: Missing a name for object member"},
      {R"J(7)J", "a schema must be an object or a boolean"},
  };
  for (const Case &c : cases) {
    auto g = Grammar::fromJsonSchema(c.schema);
    ASSERT_FALSE(g) << c.schema;
    EXPECT_NE(g.message().find(c.message), std::string::npos) << c.schema << " -> " << g.message();
  }
}

TEST(Schema, GenerateIsCanonical) {
  Grammar g = compile(
      R"J({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}},"required":["b"]})J",
      GrammarMode::Generate);
  EXPECT_TRUE(full(g, R"J({"b":"x"})J"));
  EXPECT_TRUE(full(g, R"J({"a":1,"b":"x","c":true})J"));
  EXPECT_FALSE(full(g, R"J({"b":"x","a":1})J"));      // schema order
  EXPECT_FALSE(full(g, R"J({"a": 1,"b":"x"})J"));     // no whitespace
  EXPECT_FALSE(full(g, R"J({"a":1})J"));              // required
  EXPECT_FALSE(full(g, R"J({"b":"x","d":1})J"));      // nothing extra next to properties
  EXPECT_FALSE(full(g, R"J({"b":"\u0078"})J"));       // one spelling per character
  EXPECT_TRUE(full(g, R"J({"b":"\"\\\n\u0001é"})J")); // canonical escapes, raw UTF-8
  Grammar tuple = compile(R"J({"prefixItems":[{"type":"integer"}],"minItems":1})J", GrammarMode::Generate);
  EXPECT_TRUE(full(tuple, "[1]"));
  EXPECT_FALSE(full(tuple, "[1,2]"));
}

TEST(Schema, CheckIsLenient) {
  Grammar g = compile(
      R"J({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string","maxLength":2}},"required":["a","b"],"additionalProperties":{"type":"null"}})J",
      GrammarMode::Check);
  EXPECT_TRUE(full(g, " {\n\t\"b\" : \"\\u00e9\\/\" , \"a\":1.0 } "));
  EXPECT_TRUE(full(g, R"J({"a":1,"zz":null,"b":"x"})J"));
  EXPECT_FALSE(full(g, R"J({"a":1,"zz":1,"b":"x"})J"));
  EXPECT_FALSE(full(g, R"J({"a":1,"b":"xyz"})J"));
  EXPECT_FALSE(full(g, R"J({"a":1,"b":"x","a":2})J")); // a known key once
  EXPECT_FALSE(full(g, R"J({"b":"x"})J"));
  Grammar open = compile(R"J({"properties":{"a":{"type":"integer"}}})J", GrammarMode::Check);
  EXPECT_TRUE(full(open, R"J({"a":1,"b":[{}]})J"));
  EXPECT_TRUE(full(open, "\"not an object\""));
  EXPECT_FALSE(full(open, R"J({"a":"x"})J"));
}

TEST(Schema, RecursionAllOfAndEnums) {
  Grammar tree = compile(
      R"J({"$defs":{"t":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/t"}}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/t"})J",
      GrammarMode::Generate);
  EXPECT_TRUE(full(tree, R"J({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})J"));
  EXPECT_FALSE(full(tree, R"J({"v":1,"kids":[{"w":2}]})J"));
  Grammar all = compile(
      R"J({"allOf":[{"properties":{"a":{"type":"integer","minimum":0}},"required":["a"]},{"properties":{"a":{"maximum":5},"b":{"type":"string"}},"additionalProperties":false}]})J",
      GrammarMode::Check);
  EXPECT_TRUE(full(all, R"J({"a":5,"b":"x"})J"));
  EXPECT_FALSE(full(all, R"J({"a":6})J"));
  EXPECT_FALSE(full(all, R"J({"a":1,"c":1})J"));
  Grammar e = compile(R"J({"type":"string","enum":["a",1,"bb",null],"maxLength":1})J", GrammarMode::Generate);
  EXPECT_TRUE(full(e, "\"a\""));
  EXPECT_FALSE(full(e, "1"));    // filtered by type
  EXPECT_FALSE(full(e, "\"bb\"")); // filtered by maxLength
}

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

TEST(Schema, DateFormatAgreesWithTheCalendar) {
  Grammar g = compile(R"J({"type":"string","format":"date"})J", GrammarMode::Check);
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  GrammarMatcher probe(g);
  for (int y : {1600, 1900, 1996, 1999, 2000, 2023, 2024, 2100, 2400, 9999})
    for (int mo = 0; mo <= 13; ++mo)
      for (int d = 0; d <= 32; ++d) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "\"%04d-%02d-%02d\"", y, mo, d);
        bool valid = mo >= 1 && mo <= 12 && d >= 1 &&
                     d <= kDays[mo - 1] + (mo == 2 && leap(y) ? 1 : 0);
        ASSERT_EQ(full(g, buf), valid) << buf;
      }
}

TEST(Schema, LeapSecondsOnlyAt2359Utc) {
  Grammar g = compile(R"J({"type":"string","format":"time"})J", GrammarMode::Check);
  Grammar gen = compile(R"J({"type":"string","format":"time"})J", GrammarMode::Generate);
  for (int h = 0; h < 24; h += 1)
    for (int m = 0; m < 60; m += 7)
      for (int oh : {0, 1, 8, 23})
        for (int om : {0, 1, 30, 59})
          for (char sign : {'+', '-'}) {
            char buf[40];
            std::snprintf(buf, sizeof buf, "\"%02d:%02d:60%c%02d:%02d\"", h, m, sign, oh, om);
            int offset = (oh * 60 + om) * (sign == '+' ? 1 : -1);
            bool valid = ((h * 60 + m - offset) % 1440 + 1440) % 1440 == 1439;
            ASSERT_EQ(full(g, buf), valid) << buf;
            ASSERT_FALSE(full(gen, buf)) << buf; // generation writes no leap seconds
          }
  EXPECT_TRUE(full(g, "\"23:59:60Z\""));
  EXPECT_TRUE(full(g, "\"12:00:00.5z\""));
  EXPECT_FALSE(full(gen, "\"12:00:00z\""));
  EXPECT_TRUE(full(gen, "\"12:00:00Z\""));
}

} // namespace
} // namespace fm
