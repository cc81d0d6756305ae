// Unit tests of the tokenizer's pieces, each against plain reference code or
// hand-derived expectations: UTF-8 repair, the ranked-merge BPE (against the
// textbook merge loop), pre-tokenizer behaviors, added-token matching,
// decoders, streaming, the regex translation, and load errors.
#include "fm/tokenizer.h"
#include "tokenizer/AddedVocabulary.h"
#include "tokenizer/Bpe.h"
#include "tokenizer/Decoder.h"
#include "tokenizer/PreTokenizer.h"
#include "tokenizer/Regex.h"
#include "tokenizer/Utf8.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using fm::TokenId;
using namespace fm::tok;

const std::string R = "\xEF\xBF\xBD"; // U+FFFD

TEST(Utf8, ReplacesMaximalSubparts) {
  // Unicode §3.9 Table 3-8 style cases, worked by hand.
  EXPECT_EQ(sanitizeUtf8("abc"), "abc");
  EXPECT_EQ(sanitizeUtf8("\xFF"), R);
  EXPECT_EQ(sanitizeUtf8("a\xC3(b"), "a" + R + "(b");
  EXPECT_EQ(sanitizeUtf8("\xF0\x9F\x98"), R); // one truncated sequence
  EXPECT_EQ(sanitizeUtf8("\xC0\xAF"), R + R); // C0 is never a lead
  EXPECT_EQ(sanitizeUtf8("\xED\xA0\x80"), R + R + R); // a surrogate
  EXPECT_EQ(sanitizeUtf8("\xF4\x90\x80\x80"), R + R + R + R); // > U+10FFFF
  EXPECT_EQ(sanitizeUtf8("\xE2\x82(\xE2\x82\xAC"), R + "(\xE2\x82\xAC");
  EXPECT_TRUE(isValidUtf8("\xF0\x9F\x98\x80 \xE6\x97\xA5"));
  EXPECT_FALSE(isValidUtf8("ok\xF0\x9F"));
}

// Unicode Table 3-7 (well-formed byte sequences), one byte at a time.
bool referenceValidUtf8(const std::string &s) {
  size_t i = 0;
  auto in = [&](size_t k, int lo, int hi) {
    return i + k < s.size() && static_cast<uint8_t>(s[i + k]) >= lo &&
           static_cast<uint8_t>(s[i + k]) <= hi;
  };
  while (i < s.size()) {
    int c = static_cast<uint8_t>(s[i]);
    size_t len = 0;
    if (c <= 0x7F)
      len = 1;
    else if (c >= 0xC2 && c <= 0xDF && in(1, 0x80, 0xBF))
      len = 2;
    else if (c == 0xE0 && in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF))
      len = 3;
    else if (((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) &&
             in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF))
      len = 3;
    else if (c == 0xED && in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF))
      len = 3;
    else if (c == 0xF0 && in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF))
      len = 4;
    else if (c >= 0xF1 && c <= 0xF3 && in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) &&
             in(3, 0x80, 0xBF))
      len = 4;
    else if (c == 0xF4 && in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF))
      len = 4;
    if (!len)
      return false;
    i += len;
  }
  return true;
}

TEST(Utf8, ValidatorEqualsTable37OnRandomStrings) {
  // ASCII runs broken by two-byte characters (as in a byte-level vocabulary),
  // longer characters, and random bytes, at lengths around the 8-byte stride.
  const std::vector<std::string> parts = {
      "a", "Hello, ", "\xC4\xA0", "\xC4\xA0t", "\xE6\x97\xA5", "\xF0\x9F\x98\x80",
      "\xC3", "\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE0\x9F\xBF", "\xC0\xAF"};
  std::mt19937 rng(7);
  int valid = 0, invalid = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    size_t pieces = rng() % 12;
    for (size_t k = 0; k < pieces; ++k) {
      if (rng() % 8 == 0)
        s.push_back(static_cast<char>(rng() & 0xFF));
      else
        s += parts[rng() % parts.size()];
    }
    bool expected = referenceValidUtf8(s);
    (expected ? valid : invalid)++;
    ASSERT_EQ(isValidUtf8(s), expected) << "round " << round << ", " << s.size() << " bytes";
  }
  EXPECT_GT(valid, 1000); // both outcomes are exercised
  EXPECT_GT(invalid, 1000);
}

// ---- BPE against the textbook loop ------------------------------------------

// Repeatedly merges the adjacent pair of lowest rank, leftmost first (the
// definition HF's priority queue implements).
std::vector<int32_t> referenceBpe(std::vector<int32_t> symbols,
                                  const std::map<std::pair<int32_t, int32_t>,
                                                 std::pair<uint32_t, int32_t>> &merges) {
  while (true) {
    size_t best = SIZE_MAX;
    uint32_t bestRank = UINT32_MAX;
    for (size_t k = 0; k + 1 < symbols.size(); ++k) {
      auto it = merges.find({symbols[k], symbols[k + 1]});
      if (it != merges.end() && it->second.first < bestRank) {
        bestRank = it->second.first;
        best = k;
      }
    }
    if (best == SIZE_MAX)
      return symbols;
    symbols[best] = merges.at({symbols[best], symbols[best + 1]}).second;
    symbols.erase(symbols.begin() + best + 1);
  }
}

TEST(Bpe, RankedQueueEqualsTextbookMerges) {
  // A byte-level model over "abcd": single bytes, then random merges of
  // existing tokens, like a trained vocabulary.
  std::mt19937 rng(7);
  BpeModel m;
  m.options.byteLevel = true;
  std::vector<std::string> tokens = {"a", "b", "c", "d"};
  std::map<std::pair<int32_t, int32_t>, std::pair<uint32_t, int32_t>> ref;
  std::map<std::string, int32_t> ids = {{"a", 0}, {"b", 1}, {"c", 2}, {"d", 3}};
  std::vector<std::pair<int32_t, int32_t>> pairs;
  while (tokens.size() < 60) {
    int32_t x = static_cast<int32_t>(rng() % tokens.size());
    int32_t y = static_cast<int32_t>(rng() % tokens.size());
    std::string merged = tokens[x] + tokens[y];
    if (ids.count(merged) || ref.count({x, y}))
      continue;
    int32_t id = static_cast<int32_t>(tokens.size());
    tokens.push_back(merged);
    ids[merged] = id;
    ref[{x, y}] = {static_cast<uint32_t>(pairs.size()), id};
    pairs.push_back({x, y});
  }
  m.keys = tokens;
  m.present.assign(tokens.size(), 1);
  m.vocab.reset(tokens.size());
  for (size_t k = 0; k < tokens.size(); ++k)
    m.vocab.put(m.keys, static_cast<int32_t>(k));
  m.merges.reset(pairs.size());
  for (const auto &kv : ref)
    m.merges.put(kv.first.first, kv.first.second, {kv.second.first, kv.second.second});
  m.byteFallbackIds.fill(-1);
  m.byteIds.fill(-1);
  for (int b = 0; b < 4; ++b)
    m.byteIds['a' + b] = b;

  BpeScratch scratch;
  BpeCache cache;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string word;
    size_t n = 1 + rng() % 24;
    std::vector<int32_t> symbols;
    for (size_t k = 0; k < n; ++k) {
      int c = static_cast<int>(rng() % 4);
      word.push_back(static_cast<char>('a' + c));
      symbols.push_back(c);
    }
    std::vector<int32_t> got;
    m.tokenize(word, got, scratch, trial % 2 ? &cache : nullptr);
    ASSERT_EQ(got, referenceBpe(symbols, ref)) << word;
  }
}

// ---- pre-tokenizers ----------------------------------------------------------

std::vector<std::string> preTokenize(const std::string &json,
                                     const std::string &text,
                                     bool atStart = true) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  auto pt = PreTokenizer::fromJson(doc, {"test.json", "pre_tokenizer"});
  EXPECT_TRUE(pt.isOk()) << pt.message();
  Pieces p;
  p.text = text;
  p.ranges = {{0u, uint32_t(text.size())}};
  p.atInputStart = atStart;
  EXPECT_TRUE((*pt)->apply(p).isOk());
  std::vector<std::string> out;
  for (auto &r : p.ranges)
    out.push_back(p.text.substr(r.first, r.second - r.first));
  return out;
}

using Strings = std::vector<std::string>;

TEST(PreTokenizer, SplitBehaviors) {
  // HF's documented example: "the-final--countdown" split on "-".
  auto split = [](const char *behavior, bool invert = false) {
    return std::string(R"({"type": "Split", "pattern": {"String": "-"}, "behavior": ")") +
           behavior + R"(", "invert": )" + (invert ? "true" : "false") + "}";
  };
  const std::string t = "the-final--countdown";
  EXPECT_EQ(preTokenize(split("Removed"), t), (Strings{"the", "final", "countdown"}));
  EXPECT_EQ(preTokenize(split("Isolated"), t),
            (Strings{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(preTokenize(split("MergedWithPrevious"), t),
            (Strings{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(preTokenize(split("MergedWithNext"), t),
            (Strings{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(preTokenize(split("Contiguous"), t),
            (Strings{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(preTokenize(split("Removed", true), t), (Strings{"-", "-", "-"}));
}

TEST(PreTokenizer, RegexSplitWithLookahead) {
  // GPT-2's pattern keeps the last space of a run for the next word.
  EXPECT_EQ(preTokenize(R"({"type": "ByteLevel", "add_prefix_space": false})",
                        "Hi  there!\n\n 12"),
            (Strings{"Hi", " ", " there", "!", "\n\n", " 12"}));
  EXPECT_EQ(preTokenize(R"({"type": "ByteLevel", "add_prefix_space": true})", "Hi"),
            (Strings{" Hi"}));
}

TEST(PreTokenizer, MetaspaceAndDigits) {
  const std::string m = "\xE2\x96\x81";
  EXPECT_EQ(preTokenize(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"})",
                        "Hey  friend"),
            (Strings{m + "Hey", m, m + "friend"}));
  EXPECT_EQ(preTokenize(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"})",
                        "a b", false),
            (Strings{"a", m + "b"}));
  EXPECT_EQ(preTokenize(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": false})",
                        "a b"),
            (Strings{"a" + m + "b"}));
  EXPECT_EQ(preTokenize(R"({"type": "Digits", "individual_digits": true})", "a123b"),
            (Strings{"a", "1", "2", "3", "b"}));
  EXPECT_EQ(preTokenize(R"({"type": "Digits", "individual_digits": false})", "a123b٣"),
            (Strings{"a", "123", "b", "٣"}));
}

// ---- added tokens -------------------------------------------------------------

std::vector<std::string> addedSplit(const std::vector<AddedToken> &tokens,
                                    const std::string &text) {
  AddedMatcher m;
  m.build(tokens, false);
  std::vector<Segment> segs;
  m.split(text, tokens, segs);
  std::vector<std::string> out;
  for (auto &s : segs)
    out.push_back((s.id >= 0 ? "#" + std::to_string(s.id) + ":" : "") +
                  text.substr(s.start, s.end - s.start));
  return out;
}

TEST(AddedTokens, LongestLeftmostAndStripping) {
  AddedToken a{10, "<a>"}, ab{11, "<a><b>"}, l{12, "[L]"}, r{13, "[R]"}, w{14, "tok"};
  l.lstrip = true;
  r.rstrip = true;
  w.singleWord = true;
  std::vector<AddedToken> all = {a, ab, l, r, w};
  EXPECT_EQ(addedSplit(all, "x<a><b>y<a>"), (Strings{"x", "#11:<a><b>", "y", "#10:<a>"}));
  EXPECT_EQ(addedSplit(all, "x  [L]  y"), (Strings{"x", "#12:  [L]", "  y"}));
  EXPECT_EQ(addedSplit(all, "x  [R]  y"), (Strings{"x  ", "#13:[R]  ", "y"}));
  EXPECT_EQ(addedSplit(all, "a tok b"), (Strings{"a ", "#14:tok", " b"}));
  EXPECT_EQ(addedSplit(all, "atok tokb"), (Strings{"atok tokb"}));
}

// ---- whole tokenizers from small files ---------------------------------------

// A byte-level tokenizer over the 256 bytes with a few merges.
std::string byteLevelJson(const std::string &extra = "") {
  std::string vocab;
  // GPT-2's alphabet: printable bytes stand for themselves.
  auto ch = [](int b) -> std::string {
    static const auto alphabet = [] {
      std::vector<uint32_t> v(256);
      uint32_t next = 256;
      for (int x = 0; x < 256; ++x) {
        bool p = (x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF);
        v[x] = p ? uint32_t(x) : next++;
      }
      return v;
    }();
    std::string s;
    appendUtf8(s, alphabet[b]);
    if (s == "\"" || s == "\\")
      s = "\\" + s;
    return s;
  };
  for (int b = 0; b < 256; ++b)
    vocab += (b ? ", \"" : "\"") + ch(b) + "\": " + std::to_string(b);
  vocab += ", \"he\": 256, \"ll\": 257, \"hell\": 258, \"hello\": 259, \"\xC4\xA0w\": 260";
  return R"({"added_tokens": [{"id": 261, "content": "<|end|>", "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "post_processor": {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<|end|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
       "special_tokens": {"<|end|>": {"id": "<|end|>", "ids": [261], "tokens": ["<|end|>"]}}},
    "decoder": {"type": "ByteLevel"}, )" + extra + R"(
    "model": {"type": "BPE", "vocab": {)" + vocab + R"(}, "merges": ["h e", "l l", "he ll", "hell o", "Ġ w"]}})";
}

TEST(Tokenizer, EncodesMergesAddedTokensAndTemplate) {
  auto t = fm::Tokenizer::fromJson(byteLevelJson());
  ASSERT_TRUE(t.isOk()) << t.message();
  EXPECT_EQ(*t->encode("hello w"), (std::vector<TokenId>{259, 260}));
  EXPECT_EQ(*t->encode("hello<|end|>"), (std::vector<TokenId>{259, 261}));
  EXPECT_EQ(*t->encode("hello", true), (std::vector<TokenId>{261, 259}));
  EXPECT_EQ(t->vocabSize(), 262u);
  EXPECT_TRUE(t->isSpecial(261));
  EXPECT_EQ(*t->decode({259, 260, 261}), "hello w<|end|>");
  EXPECT_EQ(*t->decode({259, 260, 261}, true), "hello w");
  EXPECT_EQ(t->tokenBytes(260), " w");
  EXPECT_EQ(t->tokenToId("hello"), std::optional<TokenId>(259));
  EXPECT_EQ(t->tokenToId("\xC4\xA0w"), std::optional<TokenId>(260)); // "Ġw"
  // Malformed two-byte sequences whose bits would spell Ġ (U+0120) or '!'
  // name no token: a bad continuation byte, a continuation byte as the lead,
  // an overlong form.
  EXPECT_EQ(t->tokenToId("\xC4\x20w"), std::nullopt);
  EXPECT_EQ(t->tokenToId("\xC4\xE0w"), std::nullopt);
  EXPECT_EQ(t->tokenToId("\x84\xA0w"), std::nullopt);
  EXPECT_EQ(t->tokenToId("\xC0\xA1"), std::nullopt);
  EXPECT_EQ(t->tokenToId("\xC4"), std::nullopt);
  // Invalid input is repaired, never a crash: U+FFFD's three bytes.
  EXPECT_EQ(*t->encode("\xFF"), *t->encode(R));
  EXPECT_EQ(t->encode(R)->size(), 3u);
}

TEST(Tokenizer, DecodeRefusesUnknownIds) {
  auto t = fm::Tokenizer::fromJson(byteLevelJson(), "", "tiny.json");
  ASSERT_TRUE(t.isOk());
  auto d = t->decode({1, 262});
  ASSERT_FALSE(d.isOk());
  EXPECT_NE(d.message().find("tiny.json"), std::string::npos) << d.message();
  EXPECT_NE(d.message().find("id 262 (position 1)"), std::string::npos) << d.message();
}

TEST(StreamDecoder, NeverSplitsACharacter) {
  auto t = fm::Tokenizer::fromJson(byteLevelJson());
  ASSERT_TRUE(t.isOk());
  // "€" is E2 82 AC: three single-byte tokens here.
  fm::StreamDecoder s2(*t);
  std::string out;
  std::vector<TokenId> abc = *t->encode("a€b");
  for (TokenId id : abc) {
    auto piece = s2.push(id);
    ASSERT_TRUE(piece.isOk());
    EXPECT_TRUE(isValidUtf8(*piece));
    out += *piece;
  }
  out += s2.finish();
  EXPECT_EQ(out, "a€b");
  fm::StreamDecoder s3(*t);
  auto ids = *t->encode("€");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(*s3.push(ids[0]), "");
  EXPECT_EQ(*s3.push(ids[1]), "");
  EXPECT_EQ(s3.finish(), R); // an unfinished character at the end
}

// ---- SentencePiece-style -------------------------------------------------------

std::string spmJson() {
  std::string vocab = R"("<unk>": 0, "<s>": 1, "</s>": 2)";
  for (int b = 0; b < 256; ++b) {
    char name[16];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab += std::string(", \"") + name + "\": " + std::to_string(3 + b);
  }
  vocab += R"(, "▁": 259, "h": 260, "i": 261, "hi": 262, "▁hi": 263)";
  return R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true},
      {"id": 1, "content": "<s>", "special": true}, {"id": 2, "content": "</s>", "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": null,
    "post_processor": {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
       "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
       {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
      "vocab": {)" + vocab + R"(}, "merges": ["h i", "▁ hi"]}})";
}

TEST(Tokenizer, SentencePieceByteFallbackAndStrip) {
  auto t = fm::Tokenizer::fromJson(spmJson());
  ASSERT_TRUE(t.isOk()) << t.message();
  // "hi é": ▁hi, ▁, then é as <0xC3><0xA9>.
  EXPECT_EQ(*t->encode("hi é"), (std::vector<TokenId>{263, 259, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(*t->decode(*t->encode("hi é")), "hi é");
  EXPECT_EQ(*t->decode({263, 263}), "hi hi"); // one leading space stripped
  EXPECT_EQ(*t->decode({3 + 0xC3}), R);       // a lone byte of a character
  EXPECT_EQ(t->tokenBytes(3 + 0xC3), "\xC3");  // ... is that byte alone
  EXPECT_EQ(t->tokenBytes(263), " hi");
  fm::StreamDecoder s(*t);
  std::string out;
  std::vector<TokenId> ids = *t->encode("hi é");
  for (TokenId id : ids)
    out += *s.push(id);
  EXPECT_EQ(out + s.finish(), "hi é");
}

TEST(Tokenizer, ConfigRebuildsLlamaPostProcessor) {
  auto t = fm::Tokenizer::fromJson(spmJson(), R"({"tokenizer_class": "LlamaTokenizerFast",
      "add_bos_token": true, "add_eos_token": true, "bos_token": "<s>",
      "eos_token": {"content": "</s>", "__type": "AddedToken"}, "chat_template": "{{ 1 }}"})");
  ASSERT_TRUE(t.isOk()) << t.message();
  EXPECT_EQ(*t->encode("hi", true), (std::vector<TokenId>{1, 263, 2}));
  EXPECT_EQ(t->bosId(), std::optional<TokenId>(1));
  EXPECT_EQ(t->eosId(), std::optional<TokenId>(2));
  EXPECT_EQ(t->chatTemplate(), "{{ 1 }}");
}

// ---- errors name the file and the field ----------------------------------------

std::string loadError(const std::string &json) {
  auto t = fm::Tokenizer::fromJson(json, "", "bad.json");
  EXPECT_FALSE(t.isOk());
  return t.isOk() ? "" : t.message();
}

TEST(TokenizerErrors, NameFileAndField) {
  EXPECT_NE(loadError("{\n  \"model\": [1,\n}").find("bad.json: invalid JSON at line 3, column 1"),
            std::string::npos);
  EXPECT_NE(loadError(R"({"model": {"type": "Unigram", "vocab": []}})")
                .find("bad.json: model.type: model 'Unigram' is not supported"),
            std::string::npos);
  EXPECT_NE(loadError(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})")
                .find("bad.json: model.merges[0]: the merged token 'ab' is not in model.vocab"),
            std::string::npos);
  EXPECT_NE(loadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "z"]]}})")
                .find("model.merges[0]: token 'z' is not in model.vocab"),
            std::string::npos);
  std::string re = loadError(R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(ab"},
      "behavior": "Isolated"}, "model": {"type": "BPE", "vocab": {}, "merges": []}})");
  EXPECT_NE(re.find("bad.json: pre_tokenizer.pattern.Regex: PCRE2 rejects the regex"),
            std::string::npos) << re;
  EXPECT_NE(loadError(R"({"normalizer": {"type": "Lowercase"}, "model": {"type": "BPE", "vocab": {}, "merges": []}})")
                .find("normalizer.type: normalizer 'Lowercase' is not supported"),
            std::string::npos);
  EXPECT_NE(loadError(R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})")
                .find("model.vocab.a: must be a token id"),
            std::string::npos);
  EXPECT_NE(loadError("[]").find("bad.json: must be a JSON object"), std::string::npos);
}

// A tokenizer.json with `count` merges, enough for the load to resolve them on
// two threads: "p<i> q" fillers (each merged token in the vocabulary) except
// at the indices `at` gives; x, y, z, xy and yz are ids 0-4.
std::string manyMerges(size_t count, const std::map<size_t, std::string> &at) {
  std::string vocab = R"("x": 0, "y": 1, "z": 2, "xy": 3, "yz": 4, "q": 5)";
  std::string merges;
  for (size_t i = 0; i < count; ++i) {
    const std::string p = "p" + std::to_string(i);
    vocab += ", \"" + p + "\": " + std::to_string(6 + 2 * i) + ", \"" + p + "q\": " +
             std::to_string(7 + 2 * i);
    auto it = at.find(i);
    merges += (i ? ", \"" : "\"") + (it != at.end() ? it->second : p + " q") + "\"";
  }
  return R"({"model": {"type": "BPE", "vocab": {)" + vocab + R"(}, "merges": [)" + merges +
         "]}}";
}

std::vector<TokenId> encodeWith(const std::string &json, const std::string &text) {
  auto t = fm::Tokenizer::fromJson(json);
  EXPECT_TRUE(t.isOk()) << (t.isOk() ? "" : t.message());
  if (!t.isOk())
    return {};
  auto ids = t->encode(text);
  return ids.isOk() ? *ids : std::vector<TokenId>{};
}

TEST(Tokenizer, ManyMergesKeepTheirRanksAcrossTheLoadsHalves) {
  constexpr size_t kCount = 70000; // split at 34976 (a batch boundary)
  // The lower rank wins, from either half.
  EXPECT_EQ(encodeWith(manyMerges(kCount, {{10, "y z"}, {69995, "x y"}}), "xyz"),
            (std::vector<TokenId>{0, 4}));
  EXPECT_EQ(encodeWith(manyMerges(kCount, {{10, "x y"}, {69995, "y z"}}), "xyz"),
            (std::vector<TokenId>{3, 2}));
  // A later duplicate of a merge gives its rank, as in Hugging Face's.
  EXPECT_EQ(encodeWith(manyMerges(kCount, {{10, "x y"}, {30000, "y z"}, {69995, "x y"}}), "xyz"),
            (std::vector<TokenId>{0, 4}));
  EXPECT_EQ(encodeWith(manyMerges(kCount, {{10, "x y"}, {40000, "y z"}, {34999, "x y"}}), "xyz"),
            (std::vector<TokenId>{3, 2}));
}

TEST(TokenizerErrors, ManyMergesNameTheFirstBadOne) {
  constexpr size_t kCount = 70000;
  EXPECT_NE(loadError(manyMerges(kCount, {{69000, "p1 w"}}))
                .find("bad.json: model.merges[69000]: token 'w' is not in model.vocab"),
            std::string::npos);
  EXPECT_NE(loadError(manyMerges(kCount, {{100, "x q"}, {69000, "p1 w"}}))
                .find("bad.json: model.merges[100]: the merged token 'xq' is not in model.vocab"),
            std::string::npos);
  EXPECT_NE(loadError(manyMerges(kCount, {{35001, "nospace"}, {69000, "p1 w"}}))
                .find("model.merges[35001]: 'nospace' is not two tokens separated by a space"),
            std::string::npos);
  // A batch reports its malformed merges before its missing tokens; the two
  // threads split on a batch boundary, so one core and two name the same.
  EXPECT_NE(loadError(manyMerges(kCount, {{34999, "p1 w"}, {35001, "nospace"}}))
                .find("model.merges[35001]: 'nospace' is not two tokens separated by a space"),
            std::string::npos);
}

// ---- the regex translation ---------------------------------------------------

TEST(Regex, OnigurumaWhitespaceAndUnicode15Letters) {
  auto ws = Regex::compile("\\s+", "t");
  ASSERT_TRUE(ws.isOk());
  std::vector<std::pair<size_t, size_t>> m;
  ASSERT_TRUE(ws->forEachMatch("a\xC2\x85" "b", [&](size_t s, size_t e) {
    m.emplace_back(s, e);
  }).isOk());
  EXPECT_EQ(m, (std::vector<std::pair<size_t, size_t>>{{1, 3}})); // U+0085 is \s
  auto letters = Regex::compile("\\p{L}+", "t");
  ASSERT_TRUE(letters.isOk());
  m.clear();
  // U+11F04 KAWI LETTER A (Unicode 15.0).
  ASSERT_TRUE(letters->forEachMatch("\xF0\x91\xBC\x84", [&](size_t s, size_t e) {
    m.emplace_back(s, e);
  }).isOk());
  EXPECT_EQ(m, (std::vector<std::pair<size_t, size_t>>{{0, 4}}));
  EXPECT_EQ(Regex::translate("[^\\s\\p{N}]"), Regex::translate("[^\\s\\p{N}]"));
  EXPECT_NE(Regex::translate("[^\\s]").find("\\x{85}"), std::string::npos);
}

TEST(Regex, EmptyMatchesAdvance) {
  auto re = Regex::compile("x*", "t");
  ASSERT_TRUE(re.isOk());
  std::vector<std::pair<size_t, size_t>> m;
  ASSERT_TRUE(re->forEachMatch("axb", [&](size_t s, size_t e) { m.emplace_back(s, e); }).isOk());
  // Oniguruma's find_iter: (0,0), (1,2), (3,3); the empty match at 2, right
  // after the previous match, is skipped.
  EXPECT_EQ(m, (std::vector<std::pair<size_t, size_t>>{{0, 0}, {1, 2}, {3, 3}}));
}

} // namespace
