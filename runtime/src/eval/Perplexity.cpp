// fm::perplexity (fm/perplexity.h): llama-perplexity's windows over one or
// two sessions; the arithmetic is eval/Scoring.cpp's.
#include "fm/perplexity.h"

#include "eval/Scoring.h"

#include <algorithm>
#include <string>

namespace fm {

namespace {

std::string str(int64_t n) { return std::to_string(n); }

/// What makes `session` unable to score windows of `ctx` tokens.
Status checkSession(const Session &session, int64_t ctx) {
  FM_RETURN_IF_ERROR(session.status());
  const Model &m = session.model();
  if (!m.hasDecoder())
    return Status::error(m.name() + " is an image encoder alone (no decoder): "
                                    "it has no perplexity");
  if (m.contextLength() > 0 && ctx > m.contextLength())
    return Status::error(m.name() + ": a perplexity window of " + str(ctx) +
                         " tokens does not fit its context of " +
                         str(m.contextLength()) +
                         " tokens (fmc compile --context sets it)");
  return Status::ok();
}

/// One window from an empty cache: the unscored first half without logits,
/// then positions [first, ctx - 1) with theirs (the last token is no
/// position's input: nothing after it in the window is scored).
Expected<Logits> runWindow(Session &session, const std::vector<int32_t> &window,
                           int64_t first, int64_t chunk) {
  FM_RETURN_IF_ERROR(session.reset());
  const int64_t ctx = static_cast<int64_t>(window.size());
  auto head = session.prefill(window.data(), first, /*allLogits=*/false, chunk);
  if (!head)
    return head.status();
  return session.prefill(window.data() + first, ctx - 1 - first,
                         /*allLogits=*/true, chunk);
}

} // namespace

Status checkPerplexityBase(const Model &m, const Model &b) {
  return checkSameTokens(m, b, "KL base", "they cannot be compared token by token");
}

Expected<PerplexityResult> perplexity(Session &model,
                                      const std::vector<int32_t> &tokens,
                                      const PerplexityOptions &options,
                                      Session *base) {
  FM_RETURN_IF_ERROR(model.status());
  const Model &m = model.model();
  const int64_t ctx = options.ctx;
  if (ctx < 3)
    return Status::error(m.name() + ": a perplexity window of " + str(ctx) +
                         " tokens scores none: it must hold at least 3 (the "
                         "tokens after position ctx/2 are scored)");
  if (options.chunks < 0)
    return Status::error(m.name() + ": perplexity chunks " +
                         str(options.chunks) + " is negative (0: all)");
  if (options.prefillChunk < 0)
    return Status::error(m.name() + ": perplexity prefill chunk " +
                         str(options.prefillChunk) + " is negative");
  FM_RETURN_IF_ERROR(checkSession(model, ctx));
  if (base) {
    if (base == &model)
      return Status::error(m.name() + ": the KL base must be another session");
    FM_RETURN_IF_ERROR(checkSession(*base, ctx));
    FM_RETURN_IF_ERROR(checkPerplexityBase(m, base->model()));
  }
  const int64_t vocab = m.vocabSize();
  const int64_t available = static_cast<int64_t>(tokens.size()) / ctx;
  if (available < 1)
    return Status::error(m.name() + ": perplexity of " + str(tokens.size()) +
                         " tokens: fewer than one window of " + str(ctx) +
                         " tokens");
  if (options.bos >= vocab)
    return Status::error(m.name() + ": perplexity BOS id " + str(options.bos) +
                         " is out of range (vocab " + str(vocab) + ")");
  const int64_t chunks =
      options.chunks > 0 ? std::min(options.chunks, available) : available;
  for (int64_t i = 0; i < chunks * ctx; ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      return Status::error(m.name() + ": perplexity: token " + str(tokens[i]) +
                           " at index " + str(i) + " is out of range (vocab " +
                           str(vocab) + ")");

  const int64_t first = ctx / 2;
  const int64_t scored = ctx - 1 - first;
  PerplexityResult r;
  r.ctx = ctx;
  r.chunks = chunks;
  r.hasBase = base != nullptr;
  r.nll.reserve(static_cast<size_t>(chunks * scored));
  if (base) {
    r.baseNll.reserve(r.nll.capacity());
    r.kl.reserve(r.nll.capacity());
  }
  eval::ScoreSums sums;
  std::vector<int32_t> window(static_cast<size_t>(ctx));
  for (int64_t c = 0; c < chunks; ++c) {
    std::copy(tokens.begin() + c * ctx, tokens.begin() + (c + 1) * ctx,
              window.begin());
    if (options.bos >= 0)
      window[0] = options.bos;
    auto logits = runWindow(model, window, first, options.prefillChunk);
    if (!logits)
      return logits.status();
    Expected<Logits> baseLogits = Logits{};
    if (base) {
      baseLogits = runWindow(*base, window, first, options.prefillChunk);
      if (!baseLogits)
        return baseLogits.status();
    }
    for (int64_t j = 0; j < scored; ++j) {
      // Position first + j predicts the token after it.
      const int32_t target = window[static_cast<size_t>(first + j + 1)];
      const float *row = logits->row(j);
      const eval::RowSoftmax p = eval::rowSoftmax(row, vocab);
      const double nll = eval::tokenNll(row, p, target);
      r.nll.push_back(nll);
      if (!base) {
        sums.add(nll);
        continue;
      }
      const float *baseRow = baseLogits->row(j);
      const eval::RowSoftmax q = eval::rowSoftmax(baseRow, vocab);
      const double baseNll = eval::tokenNll(baseRow, q, target);
      const double kl = eval::klDivergence(baseRow, q, row, p, vocab);
      r.baseNll.push_back(baseNll);
      r.kl.push_back(kl);
      sums.add(nll, baseNll, kl, p.argmax == q.argmax);
    }
    if (options.progress)
      options.progress(c + 1, chunks,
                       eval::perplexityOf(sums.nll, sums.nll2, sums.count).mean);
  }

  r.tokensScored = sums.count;
  const eval::MeanError ppl = eval::perplexityOf(sums.nll, sums.nll2, sums.count);
  r.ppl = ppl.mean;
  r.pplError = ppl.error;
  if (!base)
    return r;
  const eval::MeanError basePpl =
      eval::perplexityOf(sums.baseNll, sums.baseNll2, sums.count);
  r.basePpl = basePpl.mean;
  r.basePplError = basePpl.error;
  const eval::MeanError delta = eval::deltaPerplexityOf(sums);
  r.deltaPpl = delta.mean;
  r.deltaPplError = delta.error;
  const eval::MeanError kl = eval::meanAndError(sums.kl, sums.kl2, sums.count);
  r.klMean = kl.mean;
  r.klMeanError = kl.error;
  std::vector<double> sorted = r.kl;
  std::sort(sorted.begin(), sorted.end());
  r.klP90 = eval::percentile(sorted, 0.90);
  r.klP99 = eval::percentile(sorted, 0.99);
  r.klP999 = eval::percentile(sorted, 0.999);
  const eval::MeanError top1 = eval::top1AgreementOf(sums);
  r.top1Agree = top1.mean;
  r.top1AgreeError = top1.error;
  return r;
}

Expected<PerplexityText> perplexityTokens(const Tokenizer &tokenizer,
                                          std::string_view text) {
  auto ids = tokenizer.encode(text, /*addSpecial=*/true);
  if (!ids)
    return ids.status();
  PerplexityText out;
  out.tokens = std::move(*ids);
  // The tokenizer adds BOS when an empty text encodes to it.
  auto empty = tokenizer.encode("", /*addSpecial=*/true);
  const std::optional<TokenId> bos = tokenizer.bosId();
  if (empty && bos && !empty->empty() && empty->front() == *bos)
    out.bos = *bos;
  return out;
}

} // namespace fm
