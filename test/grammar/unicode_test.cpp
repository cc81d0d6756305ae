// Code-point sets, UTF-8 sequences and digit-wise range splits against brute force.
#include "grammar/Unicode.h"

#include <gtest/gtest.h>

#include <random>

namespace fm::grammar {
namespace {

bool matches(const ByteRangeSeq &seq, const std::string &bytes) {
  if (seq.size() != bytes.size())
    return false;
  for (size_t i = 0; i < seq.size(); ++i)
    if (uint8_t(bytes[i]) < seq[i].first || uint8_t(bytes[i]) > seq[i].second)
      return false;
  return true;
}

TEST(Unicode, Utf8SequencesSpellExactlyTheSet) {
  std::mt19937 rng(1);
  for (int round = 0; round < 40; ++round) {
    CpSet set;
    for (int k = 0; k < 3; ++k) {
      uint32_t a = rng() % 0x110000, b = rng() % 0x110000;
      if (round % 3 == 0) // small ranges near the encoding-length edges
        a = (rng() % 4) * 0x7FF + rng() % 300, b = a + rng() % 300;
      set.add(std::min(a, b), std::max(a, b));
    }
    auto seqs = utf8Sequences(set);
    for (uint32_t cp = 0; cp <= kMaxCodePoint; cp += (cp < 0x1000 ? 1 : 61)) {
      if (cp >= 0xD800 && cp <= 0xDFFF)
        continue;
      std::string bytes;
      appendUtf8(bytes, cp);
      int hits = 0;
      for (const auto &s : seqs)
        hits += matches(s, bytes);
      ASSERT_EQ(hits, set.contains(cp) ? 1 : 0) << "cp " << cp << " round " << round;
    }
  }
}

TEST(Unicode, SetsNeverHoldSurrogates) {
  CpSet all = CpSet::all();
  EXPECT_FALSE(all.contains(0xD800));
  EXPECT_FALSE(all.contains(0xDFFF));
  EXPECT_TRUE(all.contains(0xD7FF));
  EXPECT_TRUE(all.contains(0xE000));
  EXPECT_TRUE(CpSet::of('a').complement().contains('b'));
  EXPECT_FALSE(CpSet::of('a').complement().contains('a'));
  EXPECT_FALSE(CpSet::of('a').complement().contains(0xDC00));
}

TEST(Unicode, DigitRangesPartitionTheRange) {
  std::mt19937 rng(2);
  for (int round = 0; round < 200; ++round) {
    uint32_t base = round % 2 ? 16 : 10, digits = round % 2 ? 4 : 3;
    uint32_t top = base == 16 ? 0xFFFF : 999;
    uint32_t a = rng() % (top + 1), b = rng() % (top + 1);
    uint32_t lo = std::min(a, b), hi = std::max(a, b);
    auto fams = digitRanges(lo, hi, base, int(digits));
    for (uint32_t v = 0; v <= top; v += (base == 16 ? 7 : 1)) {
      int hits = 0;
      for (const auto &f : fams) {
        uint32_t x = v;
        bool in = true;
        for (int d = int(digits) - 1; d >= 0; --d) {
          uint32_t digit = x % base;
          x /= base;
          if (digit < f[size_t(d)].first || digit > f[size_t(d)].second)
            in = false;
        }
        hits += in;
      }
      ASSERT_EQ(hits, (v >= lo && v <= hi) ? 1 : 0) << lo << ".." << hi << " at " << v;
    }
  }
}

TEST(Unicode, DecodeRejectsInvalidUtf8) {
  size_t i = 0;
  uint32_t cp;
  for (const char *bad : {"\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80", "\xE2\x82"}) {
    i = 0;
    EXPECT_FALSE(decodeUtf8(bad, &i, &cp)) << bad;
  }
  std::string ok = "\xF0\x9F\x92\xA9";
  i = 0;
  ASSERT_TRUE(decodeUtf8(ok, &i, &cp));
  EXPECT_EQ(cp, 0x1F4A9u);
  EXPECT_EQ(i, 4u);
}

} // namespace
} // namespace fm::grammar
