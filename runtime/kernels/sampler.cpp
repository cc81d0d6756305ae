// Token sampling: greedy, temperature, top-k and top-p (nucleus).
#include "kernels/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace fm::kernels {

Sampler::Sampler(float temperature, int topK, float topP, uint64_t seed)
    : temperature_(temperature), topK_(topK), topP_(topP), rng_(seed) {}

double Sampler::uniform() {
  // The top 53 bits, scaled into [0, 1).
  return static_cast<double>(rng_() >> 11) * 0x1p-53;
}

int32_t Sampler::sample(const float *logits, int64_t vocab) {
  assert(vocab > 0 && vocab <= INT32_MAX);
  if (!(temperature_ > 0.0f)) {
    int64_t best = 0;
    for (int64_t i = 1; i < vocab; ++i)
      if (logits[i] > logits[best])
        best = i;
    return static_cast<int32_t>(best);
  }

  // Most likely first; equal values by lower id.
  auto moreLikely = [](const Candidate &a, const Candidate &b) {
    return a.value > b.value || (a.value == b.value && a.id < b.id);
  };

  candidates_.resize(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i)
    candidates_[i] = {logits[i], static_cast<int32_t>(i)};
  auto first = candidates_.begin();
  int64_t count = vocab;
  if (topK_ > 0 && topK_ < vocab) {
    count = topK_;
    std::nth_element(first, first + count, candidates_.end(), moreLikely);
    // nth_element's order is the library's own; sort the few survivors so
    // the draw below walks them in a defined order.
    std::sort(first, first + count, moreLikely);
  }

  float maxLogit = first->value;
  for (int64_t i = 1; i < count; ++i)
    maxLogit = std::max(maxLogit, candidates_[i].value);
  const float invTemperature = 1.0f / temperature_;
  double total = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    float p = std::exp((candidates_[i].value - maxLogit) * invTemperature);
    candidates_[i].value = p;
    total += p;
  }

  if (topP_ < 1.0f) {
    // The nucleus is usually a few dozen tokens: sort only as far as
    // needed, doubling the sorted prefix until it holds topP of the mass.
    const double target = static_cast<double>(topP_) * total;
    double cumulative = 0.0;
    int64_t sorted = 0;
    int64_t keep = count;
    while (sorted < count) {
      int64_t next = std::min(count, std::max<int64_t>(64, 2 * sorted));
      std::partial_sort(first + sorted, first + next, first + count,
                        moreLikely);
      for (; sorted < next; ++sorted) {
        cumulative += candidates_[sorted].value;
        if (cumulative >= target) {
          keep = sorted + 1;
          sorted = count;
          break;
        }
      }
    }
    count = keep;
    total = 0.0;
    for (int64_t i = 0; i < count; ++i)
      total += candidates_[i].value;
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

} // namespace fm::kernels
