// Token sampling from logits: greedy, temperature, top-k and top-p (the
// runtime's public sampler; implemented in runtime/kernels/sampler.cpp), and
// the distribution it draws from (fm::TokenDistribution), which speculative
// decoding compares between a draft and the target (fm/speculative.h).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace fm {

/// A distribution over token ids as Sampler::sample draws from it: the
/// probabilities after temperature, top-k and top-p, kept as weights over
/// the candidates that survived (p(id) = weight / total), in the order the
/// draw walks them. Sampler::distribution fills one; a point mass (a
/// deterministic proposal) and the residual of speculative sampling are
/// built here. Reused buffers: after the first fill of a vocabulary size,
/// a fill allocates nothing.
class TokenDistribution {
public:
  /// The vocabulary it is over (0 before the first fill).
  int64_t vocab() const { return vocab_; }
  /// The probability of `id` (0 for ids that were cut, and outside the
  /// vocabulary). O(1) but for top-k/top-p, where it is O(candidates).
  double probability(int32_t id) const;
  /// Whether drawing needs no random number: greedy, or a point mass.
  bool deterministic() const { return form_ == Form::Point; }

  /// A point mass on `id` over `vocab` ids: the distribution of a proposal
  /// made without sampling (prompt lookup), and of greedy decoding.
  void setPoint(int32_t id, int64_t vocab);
  /// normalize(max(0, p − q)) over the vocabulary of p: what speculative
  /// sampling draws from after it rejects a token drawn from q in place of
  /// one drawn from p. When nothing is left, which happens only when p ≤ q
  /// everywhere, i.e. p = q up to rounding, where a rejection has
  /// probability 0: p itself, and false. p and q must be over the same
  /// vocabulary, and neither may be this.
  bool setResidual(const TokenDistribution &p, const TokenDistribution &q);

private:
  friend class Sampler;
  struct Candidate {
    float value; // ln(p / p_max), then p / p_max.
    int32_t id;
  };
  enum class Form {
    Point,  // all mass on point_
    Dense,  // weights_[id] for every id, blockSums_ per draw block
    Sorted, // candidates_, most likely first
  };
  /// Sums of weights_ per draw block (Dense), and total_.
  void sumBlocks();

  Form form_ = Form::Point;
  int64_t vocab_ = 0;
  int32_t point_ = 0;
  std::vector<float> weights_;
  std::vector<float> blockSums_;
  std::vector<Candidate> candidates_;
  double total_ = 1.0; // sum of the weights (Dense, Sorted)
};

/// Draws token ids from logits. temperature 0 is greedy argmax (lowest index
/// on ties). Otherwise: softmax(logits / temperature); keep the topK most
/// likely tokens (0 = all) and renormalize; keep the smallest prefix of them,
/// most likely first, whose probability reaches topP (>= 1 = all);
/// renormalize and draw. Ties in probability order by lower token id. For a
/// seed the draws are deterministic: they use the generator's raw bits, not
/// a library-defined std::*_distribution.
///
/// sample() is distribution() then draw(): the distribution that speculative
/// decoding compares is, by construction, the one sample() draws from.
///
/// Not thread-safe; reuses internal buffers, so after the first call of a
/// given vocabulary size a call allocates nothing.
class Sampler {
public:
  Sampler(float temperature, int topK, float topP, uint64_t seed);

  int32_t sample(const float *logits, int64_t vocab);

  /// The distribution sample() draws from for `logits` (greedy: a point mass
  /// on the argmax), into `out`.
  void distribution(const float *logits, int64_t vocab,
                    TokenDistribution *out) const;
  /// Draws an id from `d` with this sampler's generator (a deterministic
  /// distribution takes no random number).
  int32_t draw(const TokenDistribution &d);
  /// A uniform draw in [0, 1) built from the generator's raw bits, so it is
  /// the same across standard libraries (std::uniform_real_distribution is
  /// not).
  double uniform();

  float temperature() const { return temperature_; }
  int topK() const { return topK_; }
  float topP() const { return topP_; }

private:
  using Candidate = TokenDistribution::Candidate;
  /// Keeps the topK most likely tokens in out->candidates_, sorted.
  void selectTopK(const float *logits, int64_t vocab, float maxLogit,
                  TokenDistribution *out) const;
  /// Keeps the tokens that may be in the top-p nucleus in out->candidates_,
  /// sorted: a superset of it, found in O(vocab) by log-probability
  /// buckets; returns the mass of the whole vocabulary.
  double selectNucleusSuperset(const float *logits, int64_t vocab,
                               float maxLogit, TokenDistribution *out) const;
  /// All of the vocabulary, unsorted, in out->weights_.
  void weighAll(const float *logits, int64_t vocab, float maxLogit,
                TokenDistribution *out) const;

  float temperature_;
  int topK_;
  float topP_;
  std::mt19937_64 rng_;
  TokenDistribution drawn_; // sample()'s own
};

} // namespace fm
