// fm-run --logit-bias ID=BIAS (as llama.cpp's --logit-bias): a constant added to a token's
// logit before every sample, and before a guided constraint masks the logits.
#pragma once

#include "fm/status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fmrun {

class LogitBias {
public:
  /// Reads the --logit-bias values ("ID=BIAS", e.g. "151657=20" or "13=-5.5"): ID an integer
  /// below `vocab` (the model's logits), BIAS a finite number; the biases of a repeated ID add
  /// up. Errors name the flag and the value.
  static fm::Expected<LogitBias> parse(const std::vector<std::string> &values, int64_t vocab);

  bool empty() const { return biases_.empty(); }
  /// Adds the biases to `logits` (the model's vocab floats).
  void apply(float *logits) const;

private:
  std::vector<std::pair<int32_t, float>> biases_;
};

} // namespace fmrun
