// Session::generate with text: the model's tokenizer on both ends, the
// streaming decoder, stop ids and stop strings (fm/runtime.h), and the text
// end of a generation that generateTextSpeculative shares (TextOutput.h).
#include "fm/runtime.h"

#include "base/Clock.h"
#include "fm/sampler.h"
#include "text/TextOutput.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace fm {

const char *stopReasonName(StopReason reason) {
  switch (reason) {
  case StopReason::MaxTokens:
    return "max-new-tokens";
  case StopReason::StopId:
    return "stop-id";
  case StopReason::StopString:
    return "stop-string";
  case StopReason::ContextFull:
    return "context-full";
  case StopReason::Callback:
    return "callback";
  }
  return "?";
}

Expected<Generation> Session::generate(std::string_view prompt, Sampler &sampler,
                                       const GenerateOptions &options,
                                       const TextCallback &callback) {
  if (!status())
    return status();
  Expected<Tokenizer> tokenizer = model().tokenizer();
  if (!tokenizer)
    return tokenizer.status();
  Expected<std::vector<TokenId>> ids =
      tokenizer->encode(prompt, options.addSpecialTokens);
  if (!ids)
    return ids.status();
  return generateText(*ids, sampler, options, callback);
}

namespace rt {

Expected<TextIds> textIds(const Model &m, const std::vector<int32_t> &prompt,
                          const GenerateOptions &options) {
  if (prompt.empty())
    return Status::error(m.name() + ": the prompt is empty (no tokens)");
  if (options.maxNewTokens < 0)
    return Status::error(m.name() + ": maxNewTokens is negative");
  Expected<Tokenizer> tokenizer = m.tokenizer();
  if (!tokenizer)
    return tokenizer.status();
  const int64_t vocab = m.vocabSize();
  TextIds ids{*tokenizer, {}, {}};
  ids.isStop.assign(static_cast<size_t>(vocab), 0);
  auto addStops = [&](const std::vector<int32_t> &stops) -> Status {
    for (int32_t id : stops) {
      if (id < 0 || id >= vocab)
        return Status::error(m.name() + ": stop id " + std::to_string(id) +
                             " is out of range (vocab " + std::to_string(vocab) +
                             ")");
      ids.isStop[static_cast<size_t>(id)] = 1;
    }
    return Status::ok();
  };
  FM_RETURN_IF_ERROR(addStops(options.stopIds));
  if (options.useModelStopIds)
    FM_RETURN_IF_ERROR(addStops(m.stopIds()));
  // Ids past the tokenizer's vocabulary (a model's padded embedding) or in
  // its holes have no text: they are never sampled.
  for (int64_t id = 0; id < vocab; ++id)
    if (!ids.tokenizer.hasId(static_cast<TokenId>(id)))
      ids.textless.push_back(static_cast<int32_t>(id));
  return ids;
}

TextOutput::TextOutput(const Tokenizer &tokenizer, const GenerateOptions &options,
                       const std::vector<uint8_t> &isStop,
                       const TextCallback &callback, Generation *g)
    : isStop_(isStop), callback_(callback), g_(g),
      decoder_(tokenizer, options.skipSpecialTokens), stops_(options.stopStrings) {}

void TextOutput::emit(const std::string &piece) {
  if (piece.empty() || !listening_)
    return;
  g_->text += piece;
  if (callback_ && !callback_(piece))
    listening_ = false;
}

Expected<bool> TextOutput::push(int32_t token) {
  g_->tokens.push_back(token);
  if (isStop_[static_cast<size_t>(token)]) {
    g_->stop = StopReason::StopId;
    return false;
  }
  Expected<std::string> piece = decoder_.push(token);
  if (!piece)
    return piece.status();
  emit(stops_.push(*piece));
  if (stops_.stopped()) {
    g_->stop = StopReason::StopString;
    return false;
  }
  if (!listening_) {
    g_->stop = StopReason::Callback;
    return false;
  }
  return true;
}

void TextOutput::finish() {
  // (What ended the generation stays its reason.)
  if (g_->stop == StopReason::StopString || g_->stop == StopReason::Callback)
    return;
  emit(stops_.push(decoder_.finish()));
  emit(stops_.finish());
}

} // namespace rt

Expected<Generation> Session::generateText(const std::vector<int32_t> &prompt,
                                           Sampler &sampler,
                                           const GenerateOptions &options,
                                           const TextCallback &callback) {
  if (!status())
    return status();
  const Model &m = model();
  const int64_t vocab = m.vocabSize();
  Expected<rt::TextIds> ids = rt::textIds(m, prompt, options);
  if (!ids)
    return ids.status();
  const std::vector<int32_t> &textless = ids->textless;

  Generation g;
  g.prompt = prompt;
  g.promptTokens = static_cast<int64_t>(prompt.size());
  const double firstRunMs0 = stats().firstRunMs;
  auto t0 = std::chrono::steady_clock::now();
  Expected<Logits> first = prefill(prompt.data(), g.promptTokens,
                                   /*allLogits=*/false, options.prefillChunk);
  if (!first)
    return first.status();
  g.firstRunMs = stats().firstRunMs - firstRunMs0;
  g.prefillMs = msSince(t0) - g.firstRunMs;

  rt::TextOutput out(ids->tokenizer, options, ids->isStop, callback, &g);
  const int64_t capacity = m.contextLength();
  const float *logits = first->last();
  std::vector<float> masked;
  for (int64_t i = 0; i < options.maxNewTokens; ++i) {
    // The logits are the executor's: a copy when they are to be masked.
    const float *from = logits;
    if (!textless.empty() || options.logitsProcessor) {
      masked.assign(logits, logits + vocab);
      for (int32_t id : textless)
        masked[static_cast<size_t>(id)] = -std::numeric_limits<float>::infinity();
      if (options.logitsProcessor) {
        FM_RETURN_IF_ERROR(options.logitsProcessor(g.tokens, masked.data(), vocab));
        // The sampler needs one id to pick (all -inf would give NaNs).
        if (std::none_of(masked.begin(), masked.end(), [](float x) {
              return x > -std::numeric_limits<float>::infinity();
            }))
          return Status::error(m.name() + ": the logits processor forbade "
                                          "every id at generated token " +
                               std::to_string(g.tokens.size()));
      }
      from = masked.data();
    }
    Expected<int32_t> sampled = sample(sampler, from);
    if (!sampled)
      return sampled.status();
    const int32_t token = *sampled;
    Expected<bool> more = out.push(token);
    if (!more)
      return more.status();
    if (!*more)
      break;
    if (i + 1 == options.maxNewTokens) {
      g.stop = StopReason::MaxTokens;
      break;
    }
    if (capacity > 0 && position() >= capacity) {
      g.stop = StopReason::ContextFull;
      break;
    }
    auto t1 = std::chrono::steady_clock::now();
    Expected<const float *> next = decode(token);
    if (!next)
      return next.status();
    g.decodeMs += msSince(t1);
    g.decodeTokens += 1;
    logits = *next;
  }
  // An unfinished character at the end, and text held back for a stop
  // string that did not complete.
  out.finish();
  return g;
}

} // namespace fm
