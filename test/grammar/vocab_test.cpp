// The test-only tokenizer.json loader on the two real vocabularies the tests use: byte-level
// BPE (Qwen3) and SentencePiece with byte fallback (Llama 2).
#include "VocabLoader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

namespace fm {
namespace {

std::string path(const char *env) {
  const char *p = std::getenv(env);
  return p ? p : "";
}

int32_t find(const Vocabulary &v, const std::string &bytes) {
  auto it = std::find(v.tokens.begin(), v.tokens.end(), bytes);
  return it == v.tokens.end() ? -1 : int32_t(it - v.tokens.begin());
}

TEST(Vocab, Qwen3ByteLevel) {
  auto v = test::loadTokenizerJson(path("FM_QWEN3_TOKENIZER"), {"<|endoftext|>", "<|im_end|>"});
  ASSERT_TRUE(v) << v.message();
  EXPECT_EQ(v->tokens.size(), 151669u);
  EXPECT_EQ(v->eos, (std::vector<int32_t>{151643, 151645}));
  EXPECT_EQ(v->tokens[151643], "");         // special: never generated as text
  EXPECT_EQ(v->tokens[151657], "<tool_call>"); // not special: its text
  EXPECT_GE(find(*v, " the"), 0);            // "Ġthe"
  EXPECT_GE(find(*v, "\n"), 0);              // "Ċ"
  // Every byte is a token of its own, and some tokens end inside a UTF-8 character.
  for (int b = 0; b < 256; ++b)
    EXPECT_GE(find(*v, std::string(1, char(b))), 0) << b;
  EXPECT_TRUE(std::any_of(v->tokens.begin(), v->tokens.end(), [](const std::string &t) {
    return !t.empty() && (uint8_t(t.back()) & 0xC0) == 0xC0;
  }));
}

TEST(Vocab, Llama2SentencePiece) {
  auto v = test::loadTokenizerJson(path("FM_LLAMA2_TOKENIZER"), {"</s>"});
  ASSERT_TRUE(v) << v.message();
  EXPECT_EQ(v->tokens.size(), 32000u);
  EXPECT_EQ(v->eos, std::vector<int32_t>{2});
  EXPECT_EQ(v->tokens[13], "\n");   // <0x0A>
  EXPECT_EQ(v->tokens[3 + 0xE4], "\xE4"); // <0xE4>: a lead byte alone
  EXPECT_GE(find(*v, " the"), 0);   // "▁the"
}

TEST(Vocab, MissingFileIsAnError) {
  auto v = test::loadTokenizerJson("/nonexistent/tokenizer.json", {});
  ASSERT_FALSE(v);
  EXPECT_NE(v.message().find("cannot open"), std::string::npos);
}

} // namespace
} // namespace fm
