// fm::ConstrainedLogits: a TokenConstraint (guided generation, fm/guided.h) as the logits hook
// of Session::generate(text) / generateText, so that text prompts and chat replies can be
// constrained as token prompts are.
#pragma once

#include "fm/logits_processor.h"
#include "fm/runtime.h"
#include "fm/status.h"

#include <cstdint>
#include <vector>

namespace fm {

/// Drives one TokenConstraint through one text generation. The text path samples every token
/// itself, so the constraint's decisions become masks: a forced token leaves only that token,
/// and a constraint that is complete (finished, or stop) leaves only `stopIds`, so that the
/// generation ends with a stop id as soon as the output is complete. The tokens are handed to
/// the constraint from the hook's `generated` ids (those appended since the last call), so a
/// stop id that ends the generation and the last token of a generation cut short reach it only
/// through follow(). One object per generation (per chat reply): a `generated` shorter than
/// what it has followed is an error. The constraint must outlive it.
class ConstrainedLogits {
public:
  /// `stopIds`: the ids that end the text generation (GenerateOptions::stopIds and
  /// Model::stopIds()); the constraint's own end-of-sequence ids should be among them.
  ConstrainedLogits(TokenConstraint &constraint, std::vector<int32_t> stopIds);

  /// The hook for GenerateOptions::logitsProcessor (refers to this object).
  LogitsProcessor hook();
  /// Hands the constraint the ids of `generated` it has not seen; ids after it finished (the
  /// stop id that ends the text) are not handed on. Call it with Generation::tokens when the
  /// generation is over, so that the constraint knows the whole output.
  Status follow(const std::vector<int32_t> &generated);

private:
  Status process(const std::vector<int32_t> &generated, float *logits, int64_t vocab);
  Status keepOnly(const std::vector<int32_t> &ids, float *logits, int64_t vocab, const char *why);

  TokenConstraint *constraint_;
  std::vector<int32_t> stopIds_;
  size_t followed_ = 0;
};

} // namespace fm
