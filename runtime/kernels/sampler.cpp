// Token sampling: greedy, temperature, top-k and top-p (nucleus).
#include "fm/sampler.h"

#include "kernels/exp_approx.h"

#include <algorithm>
#include <cassert>

namespace fm {
namespace {

struct SamplerTag {};
using Exp = kernels::detail::ExpApprox<SamplerTag>;

// Partial results per reduction, for the vectorizer.
constexpr int kLanes = 16;

// Top-p over the whole vocabulary buckets tokens by z = ln(p / p_max):
// kBucketsPerNat buckets per unit of z down to -kBucketRange, the rest in
// the last bucket. The bucket masses locate the nucleus in O(vocab); only
// the tokens of the buckets it spans are sorted.
constexpr int kBucketsPerNat = 16;
constexpr int kBucketRange = 32;
constexpr int kBuckets = kBucketsPerNat * kBucketRange + 1;

// Top-k up to this size selects with a heap (O(vocab) compares, a few
// hundred pushes for typical logits); larger k uses nth_element.
constexpr int kHeapTopKLimit = 1024;

// Sampling from the whole vocabulary sums probabilities per block, so that
// the draw walks blocks, then one block.
constexpr int64_t kDrawBlock = 256;

int bucketOf(float z) {
  return z > -static_cast<float>(kBucketRange)
             ? static_cast<int>(-z * kBucketsPerNat)
             : kBuckets - 1;
}

float maxOf(const float *x, int64_t n) {
  float acc[kLanes];
  for (int l = 0; l < kLanes; ++l)
    acc[l] = x[0];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      acc[l] = acc[l] < x[i + l] ? x[i + l] : acc[l];
  float m = x[0];
  for (; i < n; ++i)
    m = m < x[i] ? x[i] : m;
  for (int l = 0; l < kLanes; ++l)
    m = m < acc[l] ? acc[l] : m;
  return m;
}

} // namespace

Sampler::Sampler(float temperature, int topK, float topP, uint64_t seed)
    : temperature_(temperature), topK_(topK), topP_(topP), rng_(seed) {}

double Sampler::uniform() {
  // The top 53 bits, scaled into [0, 1).
  return static_cast<double>(rng_() >> 11) * 0x1p-53;
}

int64_t Sampler::selectTopK(const float *logits, int64_t vocab,
                            float maxLogit) {
  // Most likely first; equal logits by lower id.
  auto moreLikely = [](const Candidate &a, const Candidate &b) {
    return a.value > b.value || (a.value == b.value && a.id < b.id);
  };
  const int64_t k = topK_;
  candidates_.clear();
  if (k <= kHeapTopKLimit) {
    // A heap of the k best so far, least likely on top. Ids come in
    // increasing order, so a tie with the top never displaces it.
    candidates_.reserve(static_cast<size_t>(k));
    for (int64_t i = 0; i < vocab; ++i) {
      Candidate c = {logits[i], static_cast<int32_t>(i)};
      if (static_cast<int64_t>(candidates_.size()) < k) {
        candidates_.push_back(c);
        std::push_heap(candidates_.begin(), candidates_.end(), moreLikely);
      } else if (c.value > candidates_.front().value) {
        std::pop_heap(candidates_.begin(), candidates_.end(), moreLikely);
        candidates_.back() = c;
        std::push_heap(candidates_.begin(), candidates_.end(), moreLikely);
      }
    }
  } else {
    candidates_.resize(static_cast<size_t>(vocab));
    for (int64_t i = 0; i < vocab; ++i)
      candidates_[i] = {logits[i], static_cast<int32_t>(i)};
    std::nth_element(candidates_.begin(), candidates_.begin() + k,
                     candidates_.end(), moreLikely);
    candidates_.resize(static_cast<size_t>(k));
  }
  std::sort(candidates_.begin(), candidates_.end(), moreLikely);
  const float invTemperature = 1.0f / temperature_;
  for (Candidate &c : candidates_)
    c.value = Exp::nonPositive((c.value - maxLogit) * invTemperature);
  return k;
}

int64_t Sampler::selectNucleusSuperset(const float *logits, int64_t vocab,
                                       float maxLogit) {
  const float invTemperature = 1.0f / temperature_;
  probs_.resize(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i)
    probs_[i] = Exp::nonPositive((logits[i] - maxLogit) * invTemperature);
  // Four interleaved histograms, so that runs of one bucket do not make a
  // chain of dependent read-modify-writes.
  double mass[4][kBuckets] = {};
  double total = 0.0;
  for (int64_t i = 0; i < vocab; ++i) {
    float z = (logits[i] - maxLogit) * invTemperature;
    mass[i & 3][bucketOf(z)] += probs_[i];
  }
  for (int b = 0; b < kBuckets; ++b)
    total += mass[0][b] + mass[1][b] + mass[2][b] + mass[3][b];
  // The nucleus ends in the first bucket where the mass reaches topP.
  const double target = static_cast<double>(topP_) * total;
  double cumulative = 0.0;
  int lastBucket = 0;
  for (; lastBucket < kBuckets - 1; ++lastBucket) {
    cumulative += mass[0][lastBucket] + mass[1][lastBucket] +
                  mass[2][lastBucket] + mass[3][lastBucket];
    if (cumulative >= target)
      break;
  }
  // Bucket b holds z in (-(b + 1), -b] / kBucketsPerNat, so the nucleus
  // superset is z > -(lastBucket + 1) / kBucketsPerNat, i.e. every bucket
  // up to lastBucket.
  candidates_.clear();
  for (int64_t i = 0; i < vocab; ++i) {
    float z = (logits[i] - maxLogit) * invTemperature;
    if (bucketOf(z) <= lastBucket)
      candidates_.push_back({probs_[i], static_cast<int32_t>(i)});
  }
  auto moreLikely = [](const Candidate &a, const Candidate &b) {
    return a.value > b.value || (a.value == b.value && a.id < b.id);
  };
  std::sort(candidates_.begin(), candidates_.end(), moreLikely);
  // Renormalizing over the whole vocabulary's mass: the caller cuts the
  // prefix against topP of the total, not of the superset.
  nucleusTotal_ = total;
  return static_cast<int64_t>(candidates_.size());
}

int32_t Sampler::sampleAll(const float *logits, int64_t vocab, float maxLogit) {
  const float invTemperature = 1.0f / temperature_;
  probs_.resize(static_cast<size_t>(vocab));
  blockSums_.resize(static_cast<size_t>((vocab + kDrawBlock - 1) / kDrawBlock));
  double total = 0.0;
  for (int64_t b0 = 0, block = 0; b0 < vocab; b0 += kDrawBlock, ++block) {
    const int64_t b1 = std::min(vocab, b0 + kDrawBlock);
    float acc[kLanes] = {};
    int64_t i = b0;
    for (; i + kLanes <= b1; i += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        float p = Exp::nonPositive((logits[i + l] - maxLogit) * invTemperature);
        probs_[i + l] = p;
        acc[l] += p;
      }
    float sum = 0.0f;
    for (; i < b1; ++i) {
      float p = Exp::nonPositive((logits[i] - maxLogit) * invTemperature);
      probs_[i] = p;
      sum += p;
    }
    for (int l = 0; l < kLanes; ++l)
      sum += acc[l];
    blockSums_[block] = sum;
    total += sum;
  }
  // Find the block, then the token. Rounding can leave u just past the
  // last block with mass; the draw then takes that block's last token with
  // mass, never one of probability 0.
  const double u = uniform() * total;
  double cumulative = 0.0;
  int64_t block = -1, lastWithMass = 0;
  const int64_t blocks = static_cast<int64_t>(blockSums_.size());
  for (int64_t b = 0; b < blocks; ++b) {
    if (!(blockSums_[b] > 0.0f))
      continue;
    lastWithMass = b;
    if (u < cumulative + blockSums_[b]) {
      block = b;
      break;
    }
    cumulative += blockSums_[b];
  }
  if (block < 0)
    block = lastWithMass;
  const int64_t b0 = block * kDrawBlock;
  const int64_t b1 = std::min(vocab, b0 + kDrawBlock);
  int64_t last = b0;
  for (int64_t i = b0; i < b1; ++i) {
    if (!(probs_[i] > 0.0f))
      continue;
    last = i;
    cumulative += probs_[i];
    if (u < cumulative)
      return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last);
}

int32_t Sampler::sample(const float *logits, int64_t vocab) {
  assert(vocab > 0 && vocab <= INT32_MAX);
  const float maxLogit = maxOf(logits, vocab);
  if (!(temperature_ > 0.0f)) {
    // The first index holding the maximum.
    for (int64_t i = 0; i < vocab; ++i)
      if (logits[i] == maxLogit)
        return static_cast<int32_t>(i);
    return 0; // Only NaNs.
  }

  const bool limitK = topK_ > 0 && topK_ < vocab;
  const bool limitP = topP_ < 1.0f;
  if (!limitK && !limitP)
    return sampleAll(logits, vocab, maxLogit);

  // candidates_[0, count): most likely first, values p / p_max.
  int64_t count;
  double total = 0.0;
  if (limitK) {
    count = selectTopK(logits, vocab, maxLogit);
    for (int64_t i = 0; i < count; ++i)
      total += candidates_[i].value;
  } else {
    count = selectNucleusSuperset(logits, vocab, maxLogit);
    total = nucleusTotal_;
  }
  if (limitP) {
    // The smallest prefix that holds topP of the mass (of the top k, when
    // top-k applies).
    const double target = static_cast<double>(topP_) * total;
    double cumulative = 0.0;
    int64_t keep = 0;
    while (keep < count && (keep == 0 || cumulative < target))
      cumulative += candidates_[keep++].value;
    count = keep;
    total = cumulative;
  }

  const double u = uniform() * total;
  double cumulative = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    cumulative += candidates_[i].value;
    if (u < cumulative)
      return candidates_[i].id;
  }
  return candidates_[count - 1].id;
}

} // namespace fm
