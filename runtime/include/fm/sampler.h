// Token sampling from logits: greedy, temperature, top-k and top-p (the
// runtime's public sampler; implemented in runtime/kernels/sampler.cpp).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace fm {

/// Draws token ids from logits. temperature 0 is greedy argmax (lowest index
/// on ties). Otherwise: softmax(logits / temperature); keep the topK most
/// likely tokens (0 = all) and renormalize; keep the smallest prefix of them,
/// most likely first, whose probability reaches topP (>= 1 = all);
/// renormalize and draw. Ties in probability order by lower token id. For a
/// seed the draws are deterministic: they use the generator's raw bits, not
/// a library-defined std::*_distribution.
///
/// Not thread-safe; reuses internal buffers, so after the first call of a
/// given vocabulary size a call allocates nothing.
class Sampler {
public:
  Sampler(float temperature, int topK, float topP, uint64_t seed);

  int32_t sample(const float *logits, int64_t vocab);

private:
  struct Candidate {
    float value; // ln(p / p_max), then p / p_max.
    int32_t id;
  };

  /// Keeps the topK most likely tokens in candidates_, sorted.
  int64_t selectTopK(const float *logits, int64_t vocab, float maxLogit);
  /// Keeps the tokens that may be in the top-p nucleus in candidates_,
  /// sorted: a superset of it, found in O(vocab) by log-probability buckets.
  int64_t selectNucleusSuperset(const float *logits, int64_t vocab,
                                float maxLogit);
  /// Draws from all of the vocabulary without sorting.
  int32_t sampleAll(const float *logits, int64_t vocab, float maxLogit);

  /// A uniform draw in [0, 1) built from the generator's raw bits, so it is
  /// the same across standard libraries (std::uniform_real_distribution is
  /// not).
  double uniform();

  float temperature_;
  int topK_;
  float topP_;
  std::mt19937_64 rng_;
  std::vector<Candidate> candidates_;
  std::vector<float> probs_;
  std::vector<float> blockSums_;
  double nucleusTotal_ = 0.0; // Mass of the vocabulary, for top-p.
};

} // namespace fm
