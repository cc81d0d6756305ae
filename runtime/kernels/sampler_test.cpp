// Checks the sampler: greedy ties, determinism per seed, top-k and top-p
// limits, and the drawn frequencies against the probabilities.
#include "fm/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace fm {
namespace {

std::vector<float> randomLogits(int64_t vocab, uint32_t seed,
                                float sigma = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> logits(vocab);
  for (float &x : logits)
    x = dist(rng);
  return logits;
}

int32_t argmax(const std::vector<float> &logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) -
                              logits.begin());
}

// Frequencies of `draws` samples.
std::vector<double> frequencies(Sampler &sampler,
                                const std::vector<float> &logits, int draws) {
  std::vector<double> counts(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i)
    counts[sampler.sample(logits.data(),
                          static_cast<int64_t>(logits.size()))] += 1.0;
  for (double &c : counts)
    c /= draws;
  return counts;
}

std::vector<float> logitsOf(const std::vector<double> &probs) {
  std::vector<float> logits;
  for (double p : probs)
    logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

TEST(Sampler, GreedyTakesLowestIndexOnTies) {
  Sampler greedy(0.0f, 0, 1.0f, 7);
  std::vector<float> logits = {1.0f, 5.0f, -2.0f, 5.0f, 5.0f};
  EXPECT_EQ(greedy.sample(logits.data(), 5), 1);
  std::vector<float> flat(100, 0.5f);
  EXPECT_EQ(greedy.sample(flat.data(), 100), 0);
  std::vector<float> single = {-1e30f};
  EXPECT_EQ(greedy.sample(single.data(), 1), 0);
}

TEST(Sampler, SameSeedSameDraws) {
  std::vector<float> logits = randomLogits(1000, 1);
  using Limits = std::pair<int, float>;
  for (auto [topK, topP] :
       {Limits{0, 1.0f}, Limits{40, 1.0f}, Limits{0, 0.9f}, Limits{50, 0.8f}}) {
    Sampler a(0.8f, topK, topP, 1234), b(0.8f, topK, topP, 1234),
        c(0.8f, topK, topP, 4321);
    int differences = 0;
    for (int i = 0; i < 200; ++i) {
      int32_t x = a.sample(logits.data(), 1000);
      ASSERT_EQ(x, b.sample(logits.data(), 1000)) << "draw " << i;
      differences += x != c.sample(logits.data(), 1000);
    }
    EXPECT_GT(differences, 0) << "another seed should draw differently";
  }
}

TEST(Sampler, TopKOneIsGreedy) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    std::vector<float> logits = randomLogits(500, seed);
    logits[seed * 7] = logits[seed * 11 + 3] = 100.0f; // A tie at the top.
    Sampler sampler(1.5f, 1, 1.0f, seed);
    for (int i = 0; i < 10; ++i)
      ASSERT_EQ(sampler.sample(logits.data(), 500), argmax(logits));
  }
}

TEST(Sampler, TinyTopPIsGreedy) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    std::vector<float> logits = randomLogits(5000, seed + 50);
    Sampler sampler(1.0f, 0, 1e-6f, seed);
    for (int i = 0; i < 10; ++i)
      ASSERT_EQ(sampler.sample(logits.data(), 5000), argmax(logits));
  }
}

TEST(Sampler, ZeroTopPKeepsTheMostLikelyToken) {
  // top_p = 0 asks for an empty nucleus: the most likely token is always
  // kept (HF's min_tokens_to_keep = 1), with and without top-k.
  for (uint32_t seed = 0; seed < 20; ++seed) {
    std::vector<float> logits = randomLogits(3000, seed + 80);
    for (int topK : {0, 40}) {
      Sampler sampler(1.0f, topK, 0.0f, seed);
      for (int i = 0; i < 5; ++i)
        ASSERT_EQ(sampler.sample(logits.data(), 3000), argmax(logits)) << topK;
    }
  }
}

TEST(Sampler, FrequenciesFollowProbabilities) {
  std::vector<double> probs = {0.1, 0.2, 0.3, 0.4};
  Sampler sampler(1.0f, 0, 1.0f, 42);
  std::vector<double> f = frequencies(sampler, logitsOf(probs), 40000);
  for (size_t i = 0; i < probs.size(); ++i)
    EXPECT_NEAR(f[i], probs[i], 0.015) << "token " << i;
}

TEST(Sampler, FrequenciesAcrossLargeVocabulary) {
  // Mass on three tokens in different blocks of the full-vocabulary draw;
  // the rest have probability 0 and must never come up.
  std::vector<float> logits(1000, -1e30f);
  logits[5] = 0.0f;
  logits[300] = std::log(2.0f);
  logits[999] = std::log(3.0f);
  Sampler sampler(1.0f, 0, 1.0f, 47);
  std::vector<double> f = frequencies(sampler, logits, 30000);
  EXPECT_NEAR(f[5], 1.0 / 6.0, 0.015);
  EXPECT_NEAR(f[300], 2.0 / 6.0, 0.015);
  EXPECT_NEAR(f[999], 3.0 / 6.0, 0.015);
  EXPECT_DOUBLE_EQ(f[5] + f[300] + f[999], 1.0);
}

TEST(Sampler, TemperatureSharpens) {
  // T = 0.5 squares the probabilities: 1:4:9:16 over 30.
  std::vector<double> probs = {0.1, 0.2, 0.3, 0.4};
  Sampler sampler(0.5f, 0, 1.0f, 43);
  std::vector<double> f = frequencies(sampler, logitsOf(probs), 40000);
  for (size_t i = 0; i < probs.size(); ++i)
    EXPECT_NEAR(f[i], (i + 1) * (i + 1) / 30.0, 0.015) << "token " << i;
}

TEST(Sampler, TopKRenormalizes) {
  std::vector<double> probs = {0.1, 0.4, 0.2, 0.3};
  Sampler sampler(1.0f, 2, 1.0f, 44);
  std::vector<double> f = frequencies(sampler, logitsOf(probs), 40000);
  EXPECT_EQ(f[0], 0.0);
  EXPECT_EQ(f[2], 0.0);
  EXPECT_NEAR(f[1], 4.0 / 7.0, 0.015);
  EXPECT_NEAR(f[3], 3.0 / 7.0, 0.015);
}

TEST(Sampler, TopPKeepsSmallestPrefix) {
  std::vector<double> probs = {0.1, 0.4, 0.2, 0.3};
  Sampler sampler(1.0f, 0, 0.65f, 45); // 0.4 + 0.3 reaches 0.65.
  std::vector<double> f = frequencies(sampler, logitsOf(probs), 40000);
  EXPECT_EQ(f[0], 0.0);
  EXPECT_EQ(f[2], 0.0);
  EXPECT_NEAR(f[1], 4.0 / 7.0, 0.015);
  EXPECT_NEAR(f[3], 3.0 / 7.0, 0.015);
}

TEST(Sampler, TopPOverLargeVocabularyDrawsOnlyFromNucleus) {
  // A nucleus of thousands of tokens out of 50000.
  const int64_t vocab = 50000;
  std::vector<float> logits = randomLogits(vocab, 99, 2.0f);
  const float topP = 0.7f;
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  double total = 0.0;
  for (float x : logits)
    total += std::exp(static_cast<double>(x) - logits[order[0]]);
  std::set<int32_t> nucleus;
  double cumulative = 0.0;
  for (int32_t id : order) {
    nucleus.insert(id);
    cumulative += std::exp(static_cast<double>(logits[id]) - logits[order[0]]);
    if (cumulative >= topP * total)
      break;
  }
  nucleus.insert(order[nucleus.size()]); // Slack for rounding at the edge.
  ASSERT_GT(nucleus.size(), 64u);
  Sampler sampler(1.0f, 0, topP, 46);
  std::vector<int64_t> rank(vocab);
  for (int64_t r = 0; r < vocab; ++r)
    rank[order[r]] = r;
  int64_t deepest = 0;
  for (int i = 0; i < 1000; ++i) {
    int32_t id = sampler.sample(logits.data(), vocab);
    ASSERT_TRUE(nucleus.count(id)) << "token " << id << " is outside top-p";
    deepest = std::max(deepest, rank[id]);
  }
  // Draws reach the far end of the nucleus, not only a sorted first chunk.
  EXPECT_GT(deepest, static_cast<int64_t>(nucleus.size()) / 2);
}


// The distribution sample() draws from, against probabilities worked out
// here: softmax of the logits / T, cut to the top k and the top-p prefix.
std::vector<double> probabilitiesOf(const TokenDistribution &d) {
  std::vector<double> p;
  for (int32_t id = 0; id < d.vocab(); ++id)
    p.push_back(d.probability(id));
  return p;
}

TEST(SamplerDistribution, MatchesTheDefinition) {
  const std::vector<double> probs = {0.1, 0.2, 0.3, 0.4};
  const std::vector<float> logits = logitsOf(probs);
  struct Case {
    float t;
    int k;
    float p;
    std::vector<double> want;
  } cases[] = {
      {1.0f, 0, 1.0f, {0.1, 0.2, 0.3, 0.4}},
      {0.5f, 0, 1.0f, {1 / 30.0, 4 / 30.0, 9 / 30.0, 16 / 30.0}},
      {1.0f, 2, 1.0f, {0.0, 0.0, 3 / 7.0, 4 / 7.0}},
      {1.0f, 0, 0.65f, {0.0, 0.0, 3 / 7.0, 4 / 7.0}},
      {1.0f, 3, 0.5f, {0.0, 0.0, 3 / 7.0, 4 / 7.0}}, // 0.4 < 0.5 * 0.9
      {0.0f, 0, 1.0f, {0.0, 0.0, 0.0, 1.0}},
  };
  for (const Case &c : cases) {
    Sampler sampler(c.t, c.k, c.p, 1);
    TokenDistribution d;
    sampler.distribution(logits.data(), 4, &d);
    std::vector<double> got = probabilitiesOf(d);
    double sum = 0.0;
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(got[i], c.want[i], 1e-5) << "T " << c.t << " k " << c.k << " p " << c.p
                                           << " id " << i;
      sum += got[i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
    EXPECT_EQ(d.deterministic(), c.t == 0.0f);
    EXPECT_EQ(d.probability(-1), 0.0);
    EXPECT_EQ(d.probability(4), 0.0);
  }
}

TEST(SamplerDistribution, LargeVocabularyIsDense) {
  // The whole-vocabulary path (no cut): every id keeps its softmax weight.
  std::vector<float> logits = randomLogits(1000, 5);
  Sampler sampler(1.0f, 0, 1.0f, 1);
  TokenDistribution d;
  sampler.distribution(logits.data(), 1000, &d);
  double z = 0.0;
  for (float x : logits)
    z += std::exp(static_cast<double>(x));
  for (int32_t id : {0, 17, 999})
    EXPECT_NEAR(d.probability(id), std::exp(static_cast<double>(logits[id])) / z, 1e-5);
}

TEST(SamplerDistribution, DrawsWhatSampleDraws) {
  // sample() is distribution() then draw(): the same ids for the same seed.
  std::vector<float> logits = randomLogits(3000, 6);
  using Limits = std::pair<int, float>;
  for (auto [topK, topP] : {Limits{0, 1.0f}, Limits{40, 1.0f}, Limits{0, 0.9f}}) {
    Sampler a(0.8f, topK, topP, 77), b(0.8f, topK, topP, 77);
    TokenDistribution d;
    for (int i = 0; i < 100; ++i) {
      b.distribution(logits.data(), 3000, &d);
      ASSERT_EQ(a.sample(logits.data(), 3000), b.draw(d)) << "draw " << i;
    }
  }
}

TEST(SamplerDistribution, Residual) {
  const std::vector<float> pl = logitsOf({0.1, 0.2, 0.3, 0.4});
  const std::vector<float> ql = logitsOf({0.4, 0.3, 0.2, 0.1});
  Sampler sampler(1.0f, 0, 1.0f, 3);
  TokenDistribution p, q, r;
  sampler.distribution(pl.data(), 4, &p);
  sampler.distribution(ql.data(), 4, &q);
  // max(0, p - q) = {0, 0, 0.1, 0.3}.
  ASSERT_TRUE(r.setResidual(p, q));
  const std::vector<double> want = {0.0, 0.0, 0.25, 0.75};
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(r.probability(i), want[i], 1e-6) << i;
  std::vector<double> counts(4, 0.0);
  for (int i = 0; i < 20000; ++i)
    counts[sampler.draw(r)] += 1.0 / 20000;
  EXPECT_EQ(counts[0] + counts[1], 0.0);
  EXPECT_NEAR(counts[3], 0.75, 0.015);
  // A point mass q takes its id out of p: {0.1, 0.2, 0.3, 0} / 0.6.
  q.setPoint(3, 4);
  ASSERT_TRUE(r.setResidual(p, q));
  EXPECT_NEAR(r.probability(0), 0.1 / 0.6, 1e-6);
  EXPECT_EQ(r.probability(3), 0.0);
  // Greedy against a point mass elsewhere: the target's own point.
  Sampler greedy(0.0f, 0, 1.0f, 3);
  TokenDistribution g;
  greedy.distribution(pl.data(), 4, &g);
  q.setPoint(1, 4);
  ASSERT_TRUE(r.setResidual(g, q));
  EXPECT_EQ(r.probability(3), 1.0);
  // p = q leaves nothing: the residual is p.
  EXPECT_FALSE(r.setResidual(p, p));
  EXPECT_NEAR(r.probability(2), 0.3, 1e-6);
}

} // namespace
} // namespace fm
