// Token sampling: greedy, temperature, top-k and top-p (nucleus), as a
// distribution (TokenDistribution) and a draw from it.
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

// A draw from dense weights: the block where the cumulative weight passes
// u, then the id. Rounding can leave u just past the last block with
// weight; the draw then takes that block's last id with weight, never one
// of weight 0.
int32_t drawDense(const std::vector<float> &weights,
                  const std::vector<float> &blockSums, int64_t vocab,
                  double u) {
  double cumulative = 0.0;
  int64_t block = -1, lastWithMass = 0;
  const int64_t blocks = static_cast<int64_t>(blockSums.size());
  for (int64_t b = 0; b < blocks; ++b) {
    if (!(blockSums[b] > 0.0f))
      continue;
    lastWithMass = b;
    if (u < cumulative + blockSums[b]) {
      block = b;
      break;
    }
    cumulative += blockSums[b];
  }
  if (block < 0)
    block = lastWithMass;
  const int64_t b0 = block * kDrawBlock;
  const int64_t b1 = std::min(vocab, b0 + kDrawBlock);
  int64_t last = b0;
  for (int64_t i = b0; i < b1; ++i) {
    if (!(weights[i] > 0.0f))
      continue;
    last = i;
    cumulative += weights[i];
    if (u < cumulative)
      return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last);
}

} // namespace

// --- TokenDistribution -----------------------------------------------------

double TokenDistribution::probability(int32_t id) const {
  if (id < 0 || id >= vocab_)
    return 0.0;
  switch (form_) {
  case Form::Point:
    return id == point_ ? 1.0 : 0.0;
  case Form::Dense:
    return weights_[id] / total_;
  case Form::Sorted:
    for (const Candidate &c : candidates_)
      if (c.id == id)
        return c.value / total_;
    return 0.0;
  }
  return 0.0;
}

void TokenDistribution::setPoint(int32_t id, int64_t vocab) {
  form_ = Form::Point;
  vocab_ = vocab;
  point_ = id;
  total_ = 1.0;
}

void TokenDistribution::sumBlocks() {
  blockSums_.resize(static_cast<size_t>((vocab_ + kDrawBlock - 1) / kDrawBlock));
  double total = 0.0;
  for (int64_t b0 = 0, block = 0; b0 < vocab_; b0 += kDrawBlock, ++block) {
    const int64_t b1 = std::min(vocab_, b0 + kDrawBlock);
    float acc[kLanes] = {};
    int64_t i = b0;
    for (; i + kLanes <= b1; i += kLanes)
      for (int l = 0; l < kLanes; ++l)
        acc[l] += weights_[i + l];
    float sum = 0.0f;
    for (; i < b1; ++i)
      sum += weights_[i];
    for (int l = 0; l < kLanes; ++l)
      sum += acc[l];
    blockSums_[block] = sum;
    total += sum;
  }
  total_ = total;
}

bool TokenDistribution::setResidual(const TokenDistribution &p,
                                    const TokenDistribution &q) {
  assert(p.vocab_ == q.vocab_ && p.vocab_ > 0);
  // Dense p(id) - q(id), clamped at 0: p's mass first, then q's taken off.
  std::vector<float> &w = weights_;
  w.assign(static_cast<size_t>(p.vocab_), 0.0f);
  auto add = [&w](const TokenDistribution &d, double sign) {
    switch (d.form_) {
    case Form::Point:
      w[d.point_] += static_cast<float>(sign);
      break;
    case Form::Dense:
      for (int64_t i = 0; i < d.vocab_; ++i)
        w[i] += static_cast<float>(sign * d.weights_[i] / d.total_);
      break;
    case Form::Sorted:
      for (const Candidate &c : d.candidates_)
        w[c.id] += static_cast<float>(sign * c.value / d.total_);
      break;
    }
  };
  add(p, 1.0);
  add(q, -1.0);
  bool any = false;
  for (float &x : w) {
    x = x > 0.0f ? x : 0.0f;
    any = any || x > 0.0f;
  }
  if (!any) {
    *this = p;
    return false;
  }
  form_ = Form::Dense;
  vocab_ = p.vocab_;
  sumBlocks();
  return true;
}

// --- Sampler ---------------------------------------------------------------

Sampler::Sampler(float temperature, int topK, float topP, uint64_t seed)
    : temperature_(temperature), topK_(topK), topP_(topP), rng_(seed) {}

double Sampler::uniform() {
  // The top 53 bits, scaled into [0, 1).
  return static_cast<double>(rng_() >> 11) * 0x1p-53;
}

void Sampler::selectTopK(const float *logits, int64_t vocab, float maxLogit,
                         TokenDistribution *out) const {
  // Most likely first; equal logits by lower id.
  auto moreLikely = [](const Candidate &a, const Candidate &b) {
    return a.value > b.value || (a.value == b.value && a.id < b.id);
  };
  const int64_t k = topK_;
  std::vector<Candidate> &candidates = out->candidates_;
  candidates.clear();
  if (k <= kHeapTopKLimit) {
    // A heap of the k best so far, least likely on top. Ids come in
    // increasing order, so a tie with the top never displaces it.
    candidates.reserve(static_cast<size_t>(k));
    for (int64_t i = 0; i < vocab; ++i) {
      Candidate c = {logits[i], static_cast<int32_t>(i)};
      if (static_cast<int64_t>(candidates.size()) < k) {
        candidates.push_back(c);
        std::push_heap(candidates.begin(), candidates.end(), moreLikely);
      } else if (c.value > candidates.front().value) {
        std::pop_heap(candidates.begin(), candidates.end(), moreLikely);
        candidates.back() = c;
        std::push_heap(candidates.begin(), candidates.end(), moreLikely);
      }
    }
  } else {
    candidates.resize(static_cast<size_t>(vocab));
    for (int64_t i = 0; i < vocab; ++i)
      candidates[i] = {logits[i], static_cast<int32_t>(i)};
    std::nth_element(candidates.begin(), candidates.begin() + k,
                     candidates.end(), moreLikely);
    candidates.resize(static_cast<size_t>(k));
  }
  std::sort(candidates.begin(), candidates.end(), moreLikely);
  const float invTemperature = 1.0f / temperature_;
  for (Candidate &c : candidates)
    c.value = Exp::nonPositive((c.value - maxLogit) * invTemperature);
}

double Sampler::selectNucleusSuperset(const float *logits, int64_t vocab,
                                      float maxLogit,
                                      TokenDistribution *out) const {
  const float invTemperature = 1.0f / temperature_;
  std::vector<float> &probs = out->weights_; // scratch here
  probs.resize(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i)
    probs[i] = Exp::nonPositive((logits[i] - maxLogit) * invTemperature);
  // Four interleaved histograms, so that runs of one bucket do not make a
  // chain of dependent read-modify-writes.
  double mass[4][kBuckets] = {};
  double total = 0.0;
  for (int64_t i = 0; i < vocab; ++i) {
    float z = (logits[i] - maxLogit) * invTemperature;
    mass[i & 3][bucketOf(z)] += probs[i];
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
  std::vector<Candidate> &candidates = out->candidates_;
  candidates.clear();
  for (int64_t i = 0; i < vocab; ++i) {
    float z = (logits[i] - maxLogit) * invTemperature;
    if (bucketOf(z) <= lastBucket)
      candidates.push_back({probs[i], static_cast<int32_t>(i)});
  }
  auto moreLikely = [](const Candidate &a, const Candidate &b) {
    return a.value > b.value || (a.value == b.value && a.id < b.id);
  };
  std::sort(candidates.begin(), candidates.end(), moreLikely);
  // The caller cuts the prefix against topP of the whole vocabulary's mass,
  // not of the superset's.
  return total;
}

void Sampler::weighAll(const float *logits, int64_t vocab, float maxLogit,
                       TokenDistribution *out) const {
  const float invTemperature = 1.0f / temperature_;
  std::vector<float> &w = out->weights_;
  w.resize(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i)
    w[i] = Exp::nonPositive((logits[i] - maxLogit) * invTemperature);
  out->form_ = TokenDistribution::Form::Dense;
  out->vocab_ = vocab;
  out->sumBlocks();
}

void Sampler::distribution(const float *logits, int64_t vocab,
                           TokenDistribution *out) const {
  assert(vocab > 0 && vocab <= INT32_MAX);
  const float maxLogit = maxOf(logits, vocab);
  if (!(temperature_ > 0.0f)) {
    // The first index holding the maximum (0 when all are NaN).
    int32_t argmax = 0;
    for (int64_t i = 0; i < vocab; ++i)
      if (logits[i] == maxLogit) {
        argmax = static_cast<int32_t>(i);
        break;
      }
    out->setPoint(argmax, vocab);
    return;
  }

  const bool limitK = topK_ > 0 && topK_ < vocab;
  const bool limitP = topP_ < 1.0f;
  if (!limitK && !limitP) {
    weighAll(logits, vocab, maxLogit, out);
    return;
  }

  // candidates_: most likely first, values p / p_max.
  double total = 0.0;
  if (limitK) {
    selectTopK(logits, vocab, maxLogit, out);
    for (const Candidate &c : out->candidates_)
      total += c.value;
  } else {
    total = selectNucleusSuperset(logits, vocab, maxLogit, out);
  }
  std::vector<Candidate> &candidates = out->candidates_;
  if (limitP) {
    // The smallest prefix that holds topP of the mass (of the top k, when
    // top-k applies).
    const double target = static_cast<double>(topP_) * total;
    const size_t count = candidates.size();
    double cumulative = 0.0;
    size_t keep = 0;
    while (keep < count && (keep == 0 || cumulative < target))
      cumulative += candidates[keep++].value;
    candidates.resize(keep);
    total = cumulative;
  }
  out->form_ = TokenDistribution::Form::Sorted;
  out->vocab_ = vocab;
  out->total_ = total;
}

int32_t Sampler::draw(const TokenDistribution &d) {
  using Form = TokenDistribution::Form;
  switch (d.form_) {
  case Form::Point:
    return d.point_;
  case Form::Dense:
    return drawDense(d.weights_, d.blockSums_, d.vocab_, uniform() * d.total_);
  case Form::Sorted: {
    const double u = uniform() * d.total_;
    double cumulative = 0.0;
    for (const Candidate &c : d.candidates_) {
      cumulative += c.value;
      if (u < cumulative)
        return c.id;
    }
    return d.candidates_.back().id;
  }
  }
  return 0;
}

int32_t Sampler::sample(const float *logits, int64_t vocab) {
  distribution(logits, vocab, &drawn_);
  return draw(drawn_);
}

} // namespace fm
