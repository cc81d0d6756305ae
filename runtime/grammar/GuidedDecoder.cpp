// fm::GuidedDecoder: a grammar's token mask applied to the logits of every generation step.
#include "fm/guided.h"

#include "grammar/TokenMasks.h"

#include <algorithm>
#include <limits>

namespace fm {

namespace {

// "…" + the last bytes of `text`, quoted for a message.
std::string tail(const std::string &text) {
  constexpr size_t kShown = 40;
  std::string shown = text.size() > kShown ? text.substr(text.size() - kShown) : text;
  return (text.size() > kShown ? "'..." : "'") + shown + "'";
}

} // namespace

GuidedDecoder::GuidedDecoder(const TokenMasker &masker)
    : masker_(masker), matcher_(masker), mask_(masker.maskWords()) {
  for (int32_t e : masker.shared()->vocab().eos)
    if (e >= 0 && e < masker.vocabSize() && std::find(eos_.begin(), eos_.end(), e) == eos_.end())
      eos_.push_back(e);
}

Expected<TokenConstraint::Step> GuidedDecoder::process(float *logits, int64_t vocab) {
  if (vocab != masker_.vocabSize())
    return Status::error("guided generation: the model has " + std::to_string(vocab) +
                         " logits per step but the grammar's vocabulary has " +
                         std::to_string(masker_.vocabSize()) + " tokens");
  Step step;
  if (matcher_.isFinished()) {
    step.stop = true;
    return step;
  }
  const MaskInfo info = matcher_.fillMask(mask_.data());
  if (info.allowed == 0) {
    // Complete, and the vocabulary has no end-of-sequence id to say so: stop here.
    if (matcher_.isAccepting()) {
      step.stop = true;
      return step;
    }
    return Status::error("guided generation: no token of the vocabulary continues the text " +
                         tail(text_) + "; the grammar expects " + matcher_.describeExpected());
  }
  if (info.forced >= 0) {
    step.forced = info.forced;
    ++forced_;
    return step;
  }
  if (info.eosAllowed && info.allowed == int64_t(eos_.size())) {
    step.forced = eos_.front(); // complete, and nothing else may follow
    ++forced_;
    return step;
  }
  // Forbidden tokens to -inf, a 32-token word at a time where the mask is all 0 or all 1.
  const float ninf = -std::numeric_limits<float>::infinity();
  const size_t words = mask_.size();
  for (size_t w = 0; w < words; ++w) {
    const uint32_t m = mask_[w];
    const size_t base = w * 32;
    const size_t n = std::min<size_t>(32, size_t(vocab) - base);
    if (m == 0xFFFFFFFFu)
      continue;
    if (m == 0) {
      std::fill(logits + base, logits + base + n, ninf);
      continue;
    }
    for (size_t b = 0; b < n; ++b)
      if (!((m >> b) & 1u))
        logits[base + b] = ninf;
  }
  return step;
}

Status GuidedDecoder::accept(int32_t token) {
  const Vocabulary &v = masker_.shared()->vocab();
  if (!matcher_.acceptToken(token)) {
    std::string what = token >= 0 && token < masker_.vocabSize()
                           ? "token " + std::to_string(token) + " ('" + v.tokens[size_t(token)] + "')"
                           : "token " + std::to_string(token) + " (outside the vocabulary)";
    return Status::error("guided generation: " + what + " does not fit after " + tail(text_) +
                         "; the grammar expects " + matcher_.describeExpected());
  }
  if (!matcher_.isFinished())
    text_ += v.tokens[size_t(token)];
  return Status::ok();
}

size_t GuidedDecoder::acceptText(std::string_view bytes) {
  size_t n = matcher_.acceptBytes(bytes);
  text_.append(bytes.data(), n);
  return n;
}

ToolCallDecoder::ToolCallDecoder(const TokenMasker &call, ToolCallSyntax syntax,
                                 ToolChoice choice)
    : masker_(call), syntax_(std::move(syntax)), call_(call), state_(State::Free) {
  if (choice == ToolChoice::Required) {
    if (syntax_.openerIsCall) {
      state_ = State::Call;
    } else {
      forcedSeq_ = syntax_.openerTokens;
      forcedSeq_.insert(forcedSeq_.end(), syntax_.afterOpener.begin(), syntax_.afterOpener.end());
      state_ = forcedSeq_.empty() ? State::Call : State::Forcing;
    }
  }
}

const std::string &ToolCallDecoder::bytesOf(int32_t token) const {
  static const std::string kNone;
  const Vocabulary &v = masker_.shared()->vocab();
  return token >= 0 && size_t(token) < v.tokens.size() ? v.tokens[size_t(token)] : kNone;
}

bool ToolCallDecoder::finished() const {
  switch (state_) {
  case State::Free:
    return freeDone_;
  case State::Forcing:
    return false;
  case State::Call:
    return call_.finished();
  }
  return false;
}

Expected<TokenConstraint::Step> ToolCallDecoder::process(float *logits, int64_t vocab) {
  Step step;
  switch (state_) {
  case State::Free:
    if (vocab != masker_.vocabSize())
      return Status::error("tool calling: the model has " + std::to_string(vocab) +
                           " logits per step but the vocabulary has " +
                           std::to_string(masker_.vocabSize()) + " tokens");
    step.stop = freeDone_;
    return step;
  case State::Forcing:
    step.forced = forcedSeq_[forcing_];
    return step;
  case State::Call:
    return call_.process(logits, vocab);
  }
  return step;
}

Status ToolCallDecoder::accept(int32_t token) {
  switch (state_) {
  case State::Free: {
    const Vocabulary &v = masker_.shared()->vocab();
    if (std::find(v.eos.begin(), v.eos.end(), token) != v.eos.end()) {
      freeDone_ = true;
      return Status::ok();
    }
    const std::string &bytes = bytesOf(token);
    const size_t before = free_.size();
    free_ += bytes;
    const std::string &op = syntax_.opener;
    if (op.empty())
      return Status::ok();
    // Only an occurrence that this token completes is new.
    size_t from = before >= op.size() ? before - op.size() + 1 : 0;
    size_t at = free_.find(op, from);
    if (at == std::string::npos)
      return Status::ok();
    std::string rest = free_.substr(at);
    free_.resize(at);
    if (syntax_.openerIsCall) {
      call_.acceptText(rest); // the opener fits the call grammar; bytes after it, as far as they fit
      state_ = State::Call;
    } else {
      forcedSeq_ = syntax_.afterOpener;
      forcing_ = 0;
      state_ = forcedSeq_.empty() ? State::Call : State::Forcing;
    }
    return Status::ok();
  }
  case State::Forcing:
    if (token != forcedSeq_[forcing_])
      return Status::error("tool calling: token " + std::to_string(token) +
                           " where the call's opener needs token " +
                           std::to_string(forcedSeq_[forcing_]));
    if (++forcing_ == forcedSeq_.size())
      state_ = State::Call;
    return Status::ok();
  case State::Call:
    return call_.accept(token);
  }
  return Status::ok();
}

} // namespace fm
