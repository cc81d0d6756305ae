// The runtime's shared caches used from several threads at once, as a server
// would: one fm::Tokenizer (its BPE cache of merged pieces) and one
// fm::TokenMasker (its lazily filled per-position mask cache) shared by
// threads that each must get exactly what a single-thread run over a fresh
// instance gives. Run under TSan by `make check` (scripts/check-sanitize.sh),
// where a race on either cache is a report even when the results agree.
#include "fm/grammar.h"
#include "fm/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace fm {
namespace {

constexpr int kThreads = 4;

std::string qwen3Path() {
  const char *p = std::getenv("FM_QWEN3_TOKENIZER");
  return p ? p : "";
}

Tokenizer openQwen3() {
  auto t = Tokenizer::open(qwen3Path());
  EXPECT_TRUE(t) << t.message();
  if (!t)
    std::abort();
  return std::move(*t);
}

// Texts with many distinct pieces (more than the cache's 16384 slots, so
// that threads overwrite each other's slots), repeated pieces (cache hits),
// digits, punctuation, multi-byte characters and a special token.
std::vector<std::string> corpus() {
  static const char *const kUnits[] = {
      "a", "e", "i", "o", "u", "th", "st", "qu", "ng", "r", "l", "m", "s",
      "k", "z", "\xC3\xA9", "\xC3\xBC", "\xE6\x97\xA5", "\xE6\x9C\xAC",
      "\xD0\xB4", "\xF0\x9F\x98\x80"};
  static const char *const kJoins[] = {" ", " ", " ", ", ", ". ", "\n",
                                       "  ", "-", "'s ", " 42", " 2026 "};
  std::mt19937 rng(18);
  std::vector<std::string> texts;
  for (int n = 0; n < 600; ++n) {
    std::string t;
    int words = 20 + int(rng() % 40);
    for (int w = 0; w < words; ++w) {
      int len = 1 + int(rng() % 6);
      for (int k = 0; k < len; ++k)
        t += kUnits[rng() % (sizeof kUnits / sizeof *kUnits)];
      t += kJoins[rng() % (sizeof kJoins / sizeof *kJoins)];
    }
    if (n % 7 == 0)
      t += "<|im_end|>";
    texts.push_back(std::move(t));
  }
  return texts;
}

TEST(SharedCaches, TokenizerEncodesFromManyThreadsLikeOne) {
  const std::vector<std::string> texts = corpus();
  // The reference: one thread, its own tokenizer (its own cache).
  std::vector<std::vector<TokenId>> want;
  {
    Tokenizer ref = openQwen3();
    for (const std::string &t : texts) {
      auto ids = ref.encode(t);
      ASSERT_TRUE(ids) << ids.message();
      want.push_back(std::move(*ids));
    }
  }
  const Tokenizer shared = openQwen3();
  std::vector<int> mismatches(kThreads, 0), errors(kThreads, 0);
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th)
    threads.emplace_back([&, th] {
      // Each thread starts elsewhere in the corpus and goes round twice, so
      // that the same pieces are merged, cached and read by different threads.
      for (size_t k = 0; k < 2 * texts.size(); ++k) {
        size_t i = (k + size_t(th) * texts.size() / kThreads) % texts.size();
        auto ids = shared.encode(texts[i]);
        if (!ids)
          ++errors[th];
        else if (*ids != want[i])
          ++mismatches[th];
      }
    });
  for (auto &t : threads)
    t.join();
  for (int th = 0; th < kThreads; ++th) {
    EXPECT_EQ(errors[th], 0) << "thread " << th;
    EXPECT_EQ(mismatches[th], 0) << "thread " << th;
  }
}

// A schema whose grammar has a few dozen positions, so that the threads
// race to fill the same lazily computed entries.
const char *kSchema = R"({"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 12},
  "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
  "score": {"type": "number"}},
  "required": ["name", "age", "tags"]})";

Vocabulary vocabularyOf(const Tokenizer &t) {
  Vocabulary v;
  v.tokens.resize(t.vocabSize());
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (t.hasId(TokenId(i)) && !t.isSpecial(TokenId(i)))
      v.tokens[i] = t.tokenBytes(TokenId(i));
  for (const char *eos : {"<|endoftext|>", "<|im_end|>"})
    if (auto id = t.tokenToId(eos))
      v.eos.push_back(*id);
  return v;
}

struct Path {
  std::vector<int32_t> tokens;
  std::vector<std::vector<uint32_t>> masks; // before each token
  std::vector<int64_t> allowed;
};

// One random walk through the grammar: at each step the mask, then a
// random allowed token (eos once the text may end and 40 steps passed).
Path walk(const TokenMasker &masker, int32_t eos, uint64_t seed) {
  Path p;
  std::mt19937_64 rng(seed);
  GrammarMatcher m(masker);
  const size_t words = masker.maskWords();
  for (int step = 0; step < 80 && !m.isFinished(); ++step) {
    std::vector<uint32_t> mask(words);
    MaskInfo info = m.fillMask(mask.data());
    std::vector<int32_t> ok;
    for (int32_t t = 0; t < masker.vocabSize(); ++t)
      if (mask[size_t(t) / 32] >> (t % 32) & 1u)
        ok.push_back(t);
    EXPECT_FALSE(ok.empty()) << "seed " << seed << " step " << step;
    if (ok.empty())
      break;
    int32_t tok = info.eosAllowed && step >= 40 ? eos : ok[rng() % ok.size()];
    p.masks.push_back(std::move(mask));
    p.allowed.push_back(info.allowed);
    p.tokens.push_back(tok);
    EXPECT_TRUE(m.acceptToken(tok)) << "seed " << seed << " step " << step;
  }
  return p;
}

TEST(SharedCaches, MaskCacheFillsFromManyThreadsLikeOne) {
  const Tokenizer tok = openQwen3();
  const Vocabulary vocab = vocabularyOf(tok);
  auto g = Grammar::fromJsonSchema(kSchema);
  ASSERT_TRUE(g) << g.message();

  // The reference: single-thread walks over their own masker.
  std::vector<Path> paths;
  {
    auto ref = TokenMasker::create(*g, vocab);
    ASSERT_TRUE(ref) << ref.message();
    for (uint64_t seed = 1; seed <= kThreads; ++seed)
      paths.push_back(walk(*ref, vocab.eos.at(0), seed));
  }
  // A walk ends when its text is complete (eos is then the only choice):
  // each still masks a few dozen steps.
  size_t steps = 0;
  for (const Path &p : paths)
    steps += p.tokens.size();
  ASSERT_GE(steps, 16u * kThreads);

  // A fresh masker shared by every thread, filled lazily while they mask;
  // one more thread precomputes it meanwhile and reads its statistics.
  auto shared = TokenMasker::create(*g, vocab);
  ASSERT_TRUE(shared) << shared.message();
  const TokenMasker &masker = *shared;
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th)
    threads.emplace_back([&, th] {
      for (int r = 0; r < kThreads; ++r) {
        const Path &p = paths[size_t(th + r) % paths.size()];
        GrammarMatcher m(masker);
        std::vector<uint32_t> mask(masker.maskWords());
        for (size_t s = 0; s < p.tokens.size(); ++s) {
          MaskInfo info = m.fillMask(mask.data());
          if (mask != p.masks[s] || info.allowed != p.allowed[s] ||
              !m.acceptToken(p.tokens[s])) {
            ++bad[th];
            break;
          }
        }
      }
    });
  size_t filled = 0, bytes = 0;
  std::thread pre([&] {
    filled = shared->precompute();
    bytes = shared->cacheBytes();
  });
  for (auto &t : threads)
    t.join();
  pre.join();
  for (int th = 0; th < kThreads; ++th)
    EXPECT_EQ(bad[th], 0) << "thread " << th;
  EXPECT_GT(shared->cachedPositions(), 0u);
  EXPECT_GT(bytes, 0u);
  (void)filled; // how many the precompute thread got before the maskers
}

} // namespace
} // namespace fm
