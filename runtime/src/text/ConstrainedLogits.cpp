// fm::ConstrainedLogits (fm/constrained_logits.h).
#include "fm/constrained_logits.h"

#include <algorithm>
#include <limits>
#include <string>

namespace fm {

ConstrainedLogits::ConstrainedLogits(TokenConstraint &constraint, std::vector<int32_t> stopIds)
    : constraint_(&constraint), stopIds_(std::move(stopIds)) {}

LogitsProcessor ConstrainedLogits::hook() {
  return [this](const std::vector<int32_t> &generated, float *logits, int64_t vocab) {
    return process(generated, logits, vocab);
  };
}

Status ConstrainedLogits::follow(const std::vector<int32_t> &generated) {
  if (generated.size() < followed_)
    return Status::error("guided generation: the generation has " +
                         std::to_string(generated.size()) + " tokens, fewer than the " +
                         std::to_string(followed_) +
                         " the constraint followed (one constraint per generation)");
  for (; followed_ < generated.size(); ++followed_)
    if (!constraint_->finished())
      FM_RETURN_IF_ERROR(constraint_->accept(generated[followed_]));
  return Status::ok();
}

Status ConstrainedLogits::keepOnly(const std::vector<int32_t> &ids, float *logits,
                                   int64_t vocab, const char *why) {
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> kept;
  kept.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab)
      return Status::error("guided generation: token " + std::to_string(id) + " (" + why +
                           ") is outside the model's " + std::to_string(vocab) + " logits");
    kept.push_back(logits[id]);
  }
  std::fill(logits, logits + vocab, ninf);
  for (size_t i = 0; i < ids.size(); ++i)
    // A token the caller masked earlier (a textless id) still has to be taken: a finite logit.
    logits[ids[i]] = kept[i] > ninf ? kept[i] : 0.0f;
  return Status::ok();
}

Status ConstrainedLogits::process(const std::vector<int32_t> &generated, float *logits,
                                  int64_t vocab) {
  FM_RETURN_IF_ERROR(follow(generated));
  if (!constraint_->finished()) {
    Expected<TokenConstraint::Step> step = constraint_->process(logits, vocab);
    if (!step)
      return step.status();
    if (step->forced >= 0)
      return keepOnly({step->forced}, logits, vocab, "forced by the constraint");
    if (!step->stop)
      return Status::ok();
  }
  // Complete: only a stop id may follow.
  if (stopIds_.empty())
    return Status::error("guided generation: the output is complete, but there is no stop id "
                         "to end the generation with");
  return keepOnly(stopIds_, logits, vocab, "a stop id");
}

} // namespace fm
