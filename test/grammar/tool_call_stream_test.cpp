// fm::ToolCallStream: the free text of a tool-calling generation handed out piece by piece
// (a free-text prefix then a call, a call with no prefix, free text only, openers split across
// pieces), and random texts against a brute-force reference of what is already free.
#include "fm/tool_call_stream.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace fm {
namespace {

const std::string kQwen = "<tool_call>";
const std::string kBare = "{\"name\"";

// Pushes every piece; returns what each push handed out.
std::vector<std::string> pushAll(ToolCallStream &s, const std::vector<std::string> &pieces) {
  std::vector<std::string> out;
  for (const std::string &p : pieces)
    out.push_back(s.push(p));
  return out;
}

TEST(ToolCallStream, FreeTextPrefixThenACall) {
  ToolCallStream s(kQwen, ToolChoice::Auto);
  auto out = pushAll(s, {"Sure", ", let me", " check.", "\n", "<tool_call>", "\n", "{\"name\"",
                         ":\"get_weather\"}"});
  // Each piece of the prefix is out as soon as it arrives, nothing of the call.
  EXPECT_EQ(out, (std::vector<std::string>{"Sure", ", let me", " check.", "\n", "", "", "", ""}));
  EXPECT_TRUE(s.inCall());
  EXPECT_TRUE(s.atLineStart());
}

TEST(ToolCallStream, APrefixEndingInsideThePieceOfTheOpener) {
  ToolCallStream s(kBare, ToolChoice::Auto);
  auto out = pushAll(s, {"I will call it: {\"", "name", "\":\"add\""});
  EXPECT_EQ(out, (std::vector<std::string>{"I will call it: ", "", ""}));
  EXPECT_TRUE(s.inCall());
  EXPECT_FALSE(s.atLineStart()); // the call's line needs a newline before it
}

TEST(ToolCallStream, ACallWithNoPrefix) {
  ToolCallStream s(kQwen, ToolChoice::Auto);
  auto out = pushAll(s, {"<tool_call>", "\n", "{\"name\":\"add\"}"});
  EXPECT_EQ(out, (std::vector<std::string>{"", "", ""}));
  EXPECT_TRUE(s.inCall());
  EXPECT_TRUE(s.atLineStart());
  ToolCallStream bare(kBare, ToolChoice::Auto);
  EXPECT_EQ(pushAll(bare, {"{\"", "name", "\":"}), (std::vector<std::string>{"", "", ""}));
  EXPECT_TRUE(bare.inCall());
}

TEST(ToolCallStream, FreeTextOnly) {
  ToolCallStream s(kQwen, ToolChoice::Auto);
  // "<tool" waits for the next piece; "<tool_box>" is not the opener, so it comes out whole.
  auto out = pushAll(s, {"Hello", " <", "tool", "_box> x", " and <tool_ca"});
  EXPECT_EQ(out, (std::vector<std::string>{"Hello", " ", "", "<tool_box> x", " and "}));
  EXPECT_FALSE(s.inCall());
  EXPECT_EQ(s.rest(), "<tool_ca"); // an opener that never completed is free text after all
  EXPECT_EQ(s.rest(), "");
  EXPECT_FALSE(s.atLineStart());
}

TEST(ToolCallStream, HoldsBackOnlyWhatMayStillBeTheOpener) {
  ToolCallStream s(kBare, ToolChoice::Auto);
  // Multi-byte characters before a held '{' come out; the held bytes are ASCII.
  EXPECT_EQ(s.push("caf\xC3\xA9 \xF0\x9F\x98\x80{"), "caf\xC3\xA9 \xF0\x9F\x98\x80");
  EXPECT_EQ(s.push("\"na"), "");
  EXPECT_EQ(s.push("\xC3\xA9"), "{\"na\xC3\xA9");
  EXPECT_EQ(s.push("{{\"name"), "{");
  EXPECT_EQ(s.push("\""), "");
  EXPECT_TRUE(s.inCall());
}

TEST(ToolCallStream, ARequiredCallHasNoFreeText) {
  ToolCallStream s(kQwen, ToolChoice::Required);
  EXPECT_TRUE(s.inCall());
  EXPECT_EQ(pushAll(s, {"<tool_call>", "\n{"}), (std::vector<std::string>{"", ""}));
  EXPECT_EQ(s.rest(), "");
}

TEST(ToolCallStream, TextPastAnOpenerTheConstraintDidNotTakeIsKeptUntilClose) {
  ToolCallStream s(kBare, ToolChoice::Auto);
  EXPECT_EQ(s.push("a {\"name\" b"), "a ");
  EXPECT_EQ(s.push(" c"), "");
  EXPECT_EQ(s.rest(), "{\"name\" b c");
  ToolCallStream t(kBare, ToolChoice::Auto);
  EXPECT_EQ(t.push("a {\"na"), "a ");
  t.close(); // the constraint says the call opened: the held bytes are the call's
  EXPECT_EQ(t.push("me\""), "");
  EXPECT_EQ(t.rest(), "");
}

// Brute force: the free text already settled in `text` ends at the first position where the
// opener occurs or where the rest of the text is a prefix of it.
size_t settled(const std::string &text, const std::string &opener) {
  for (size_t i = 0; i < text.size(); ++i) {
    const size_t n = std::min(opener.size(), text.size() - i);
    if (text.compare(i, n, opener, 0, n) == 0)
      return i;
  }
  return text.size();
}

TEST(ToolCallStream, RandomTextsMatchTheBruteForce) {
  std::mt19937_64 rng(7);
  const std::vector<std::string> chars = {"<", "a", "b", "x", "\xC3\xA9", "\n", "{", "\"", "n",
                                          "m", "e", "\xE2\x82\xAC"};
  for (const std::string &opener : {std::string("<ab"), std::string("<a<ab"), kBare}) {
    for (int round = 0; round < 400; ++round) {
      std::vector<std::string> pieces;
      const int n = int(rng() % 12);
      for (int p = 0; p < n; ++p) {
        std::string piece;
        for (int c = int(rng() % 4); c > 0; --c)
          piece += chars[rng() % chars.size()];
        pieces.push_back(piece);
      }
      ToolCallStream s(opener, ToolChoice::Auto);
      std::string text, out;
      for (const std::string &p : pieces) {
        text += p;
        out += s.push(p);
        const size_t k = settled(text, opener);
        const bool opened = text.find(opener) != std::string::npos;
        ASSERT_EQ(s.inCall(), opened) << text;
        ASSERT_EQ(out, text.substr(0, k)) << "opener " << opener << ", text " << text;
      }
      if (!s.inCall())
        EXPECT_EQ(out + s.rest(), text);
    }
  }
}

} // namespace
} // namespace fm
