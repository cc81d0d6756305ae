// fm::TokenConstraint: the hook through which Session::generate lets a caller restrict the
// next-token distribution before each sample (guided generation implements it: fm/guided.h).
#pragma once

#include "fm/status.h"

#include <cstdint>

namespace fm {

/// Sees every generation step: restricts the logits before the sample and follows the tokens
/// chosen. Runs on every rank of a partitioned session (each sees the same tokens), so it
/// must decide from the tokens alone, not from rank-local state.
class TokenConstraint {
public:
  virtual ~TokenConstraint() = default;

  /// What process() decided for this step.
  struct Step {
    /// A token to take without sampling (the only one allowed), or -1: sample.
    int32_t forced = -1;
    /// Generation is complete: nothing more is to be generated (no token is taken).
    bool stop = false;
  };

  /// Called before each sample with a writable copy of the model's logits (`vocab` floats):
  /// a forbidden token's logit is set to -infinity. An error ends generation with it.
  virtual Expected<Step> process(float *logits, int64_t vocab) = 0;
  /// Called with each token taken (sampled or forced), before it is fed to the model. An error
  /// (a token the processor cannot follow) ends generation with it.
  virtual Status accept(int32_t token) = 0;
  /// Generation is over after the last accepted token (e.g. an end-of-sequence token that
  /// completed the grammar): the token is not fed back.
  virtual bool finished() const = 0;
};

} // namespace fm
