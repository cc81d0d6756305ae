// fm::ModelDrafter: a small model of the target's vocabulary drafts with its
// own session and sampler; fm::checkDraft says whether it may
// (fm/speculative.h).
#include "fm/speculative.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace fm {

namespace {

/// The probability of the most likely id under softmax(logits): 1 / Σ
/// exp(l − max).
double topProbability(const float *logits, int64_t vocab) {
  const float top = *std::max_element(logits, logits + vocab);
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i)
    sum += std::exp(static_cast<double>(logits[i]) - top);
  return 1.0 / sum;
}

} // namespace

Status checkDraft(const Model &target, const Model &draft) {
  FM_RETURN_IF_ERROR(checkSameTokens(target, draft, "draft",
                                     "the target cannot verify its tokens"));
  if (!draft.hasDecoder())
    return Status::error("the draft " + draft.name() +
                         " is an image encoder alone (no decoder): it "
                         "cannot draft tokens for " +
                         target.name());
  if (draft.ranks() > 1)
    return Status::error("the draft " + draft.name() + " is partitioned over " +
                         std::to_string(draft.ranks()) +
                         " ranks (fmc compile --ranks): a draft runs in one "
                         "process, on rank 0; compile it without --ranks");
  return Status::ok();
}

ModelDrafter::ModelDrafter(Session &draft, Sampler sampler,
                           const SpeculativeOptions &options)
    : session_(draft), sampler_(std::move(sampler)), pMin_(options.draftPMin),
      chunk_(options.prefillChunk) {}

Status ModelDrafter::draft(const std::vector<int32_t> &context, int64_t max,
                           const float *firstEdit, Draft *out) {
  out->tokens.clear();
  if (max <= 0 || context.empty())
    return Status::ok();
  const Model &m = session_.model();
  const int64_t vocab = m.vocabSize();
  // Rewind to what the session shares with the context (the rejected
  // drafts of the last round go), feeding at least the last token, whose
  // logits the first draft comes from.
  const std::vector<int32_t> &have = session_.tokens();
  size_t common = 0;
  while (common < have.size() && common < context.size() &&
         have[common] == context[common])
    ++common;
  if (common == context.size())
    --common;
  // The draft's own context may be the shorter: no draft once it is full.
  const int64_t capacity = m.contextLength();
  if (capacity > 0)
    max = std::min<int64_t>(max, capacity - static_cast<int64_t>(context.size()) + 1);
  if (max <= 0)
    return Status::ok();
  FM_RETURN_IF_ERROR(session_.keepPrefix(static_cast<int64_t>(common)));
  // One new token (every round but the first, mostly) takes the decode
  // program, as plain decoding would; more take the prefill.
  const float *row;
  if (context.size() - common == 1) {
    Expected<const float *> next = session_.decode(context.back());
    if (!next)
      return next.status();
    row = *next;
  } else {
    Expected<Logits> fed =
        session_.prefill(context.data() + common,
                         static_cast<int64_t>(context.size() - common),
                         /*allLogits=*/false, chunk_);
    if (!fed)
      return fed.status();
    row = fed->last();
  }
  if (static_cast<int64_t>(out->from.size()) < max)
    out->from.resize(static_cast<size_t>(max));
  for (int64_t i = 0; i < max; ++i) {
    const float *from = row;
    if (i == 0 && firstEdit) {
      edited_.resize(static_cast<size_t>(vocab));
      for (int64_t v = 0; v < vocab; ++v)
        edited_[v] = row[v] + firstEdit[v];
      from = edited_.data();
    }
    if (pMin_ > 0.0f && topProbability(from, vocab) < pMin_)
      break;
    TokenDistribution &q = out->from[i];
    sampler_.distribution(from, vocab, &q);
    const int32_t d = sampler_.draw(q);
    out->tokens.push_back(d);
    // The last draft is not fed: the next round feeds it if it is taken.
    if (i + 1 < max) {
      Expected<const float *> next = session_.decode(d);
      if (!next)
        return next.status();
      row = *next;
    }
  }
  return Status::ok();
}

} // namespace fm
