// fm::generateTextSpeculative: Session::generateText's text end (stop ids,
// stop strings, streamed text) over the speculative rounds
// (fm/speculative.h).
#include "fm/speculative.h"

#include "text/TextOutput.h"

#include <algorithm>
#include <limits>

namespace fm {

namespace {

/// The text path's edit of each position as a constraint: the ids without
/// text forbidden, then the caller's logits processor, which sees the ids
/// taken so far, as in generateText.
class TextConstraint final : public TokenConstraint {
public:
  TextConstraint(const std::vector<int32_t> &textless,
                 const LogitsProcessor &processor)
      : textless_(textless), processor_(processor) {}

  Expected<Step> process(float *logits, int64_t vocab) override {
    for (int32_t id : textless_)
      logits[id] = -std::numeric_limits<float>::infinity();
    if (processor_)
      FM_RETURN_IF_ERROR(processor_(generated_, logits, vocab));
    return Step{};
  }
  Status accept(int32_t token) override {
    generated_.push_back(token);
    return Status::ok();
  }
  bool finished() const override { return false; }

private:
  const std::vector<int32_t> &textless_;
  const LogitsProcessor &processor_;
  std::vector<int32_t> generated_;
};

} // namespace

Expected<Generation> generateTextSpeculative(
    Session &target, Drafter &drafter, const std::vector<int32_t> &prompt,
    Sampler &sampler, const GenerateOptions &options,
    const SpeculativeOptions &speculative, const TextCallback &callback,
    SpeculativeStats *stats) {
  FM_RETURN_IF_ERROR(target.status());
  Expected<rt::TextIds> ids = rt::textIds(target.model(), prompt, options);
  if (!ids)
    return ids.status();

  Generation g;
  g.prompt = prompt;
  g.promptTokens = static_cast<int64_t>(prompt.size());
  rt::TextOutput out(ids->tokenizer, options, ids->isStop, callback, &g);
  Status failed = Status::ok();
  auto taken = [&](int32_t token) {
    Expected<bool> more = out.push(token);
    if (!more) {
      failed = more.status();
      return false;
    }
    return *more;
  };
  TextConstraint edit(ids->textless, options.logitsProcessor);
  const bool edits = !ids->textless.empty() || options.logitsProcessor;
  SpeculativeOptions o = speculative;
  o.prefillChunk = options.prefillChunk;
  Expected<SpeculativeResult> r =
      generateSpeculative(target, drafter, prompt, options.maxNewTokens, sampler,
                          o, edits ? &edit : nullptr, taken);
  if (!r)
    return r.status();
  FM_RETURN_IF_ERROR(failed);
  // A stop the text saw (a stop id, a stop string, the caller) is already
  // in g.stop.
  if (r->stop != StopReason::Callback)
    g.stop = r->stop;
  out.finish();
  g.prefillMs = r->prefillMs;
  g.firstRunMs = r->firstRunMs;
  g.decodeMs = r->decodeMs;
  g.decodeTokens = std::max<int64_t>(0, static_cast<int64_t>(g.tokens.size()) - 1);
  if (stats)
    *stats = r->stats;
  return g;
}

} // namespace fm
