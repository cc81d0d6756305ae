// fm::LookupDrafter: prompt lookup, drafting from the context's own n-grams
// (fm/speculative.h).
#include "fm/speculative.h"

#include <algorithm>
#include <string>

namespace fm {

LookupDrafter::LookupDrafter(int64_t vocab, int64_t ngramMax, int64_t ngramMin)
    : vocab_(vocab), ngramMax_(ngramMax), ngramMin_(ngramMin) {}

Status LookupDrafter::draft(const std::vector<int32_t> &context, int64_t max,
                            const float * /*firstEdit*/, Draft *out) {
  out->tokens.clear();
  if (ngramMin_ < 1 || ngramMax_ < ngramMin_)
    return Status::error("prompt lookup: n-gram sizes " + std::to_string(ngramMin_) +
                         " to " + std::to_string(ngramMax_) +
                         ": they must be 1 <= min <= max");
  const int64_t n = static_cast<int64_t>(context.size());
  // The longest suffix that occurred before, at its latest occurrence.
  for (int64_t g = std::min(ngramMax_, n - 1); g >= ngramMin_; --g) {
    const int32_t *suffix = context.data() + n - g;
    for (int64_t at = n - g - 1; at >= 0; --at) {
      if (!std::equal(suffix, suffix + g, context.data() + at))
        continue;
      const int64_t from = at + g;
      const int64_t count = std::min(max, n - from);
      if (static_cast<int64_t>(out->from.size()) < count)
        out->from.resize(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        out->tokens.push_back(context[from + i]);
        out->from[i].setPoint(context[from + i], vocab_);
      }
      return Status::ok();
    }
  }
  return Status::ok();
}

} // namespace fm
