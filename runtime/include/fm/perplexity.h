// fm::perplexity: scores a token stream with a Session as llama.cpp's
// llama-perplexity does, and with a base session as its --kl-divergence
// does (the base runs the same windows in the same process instead of
// reading stored logits).
//
//   auto text = fm::perplexityTokens(*model->tokenizer(), corpus);
//   fm::PerplexityOptions options;
//   options.ctx = 512;
//   options.bos = text->bos;
//   auto r = fm::perplexity(session, text->tokens, options, &baseSession);
//   printf("ppl %.4f +/- %.4f, mean KL %.6f\n", r->ppl, r->pplError, r->klMean);
//
// The method: the stream is cut into windows of `ctx` tokens that do not
// overlap (an incomplete last window is dropped); each window runs from an
// empty KV cache, teacher-forced; only its second half is scored: for j in
// [ctx/2, ctx - 1), the negative log-likelihood of token j + 1 under the
// logits of position j (log-softmax in double). ppl = exp(mean NLL).
#pragma once

#include "fm/runtime.h"
#include "fm/status.h"
#include "fm/tokenizer.h"

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace fm {

struct PerplexityOptions {
  /// Tokens per window, >= 3 (a window scores ctx - ctx/2 - 1 tokens); at
  /// most the context of each model (Model::contextLength).
  int64_t ctx = 512;
  /// Windows to score, from the start; 0: every full window.
  int64_t chunks = 0;
  /// When >= 0, each window's first token is fed as this id instead
  /// (llama-perplexity puts BOS there when the tokenizer adds one:
  /// perplexityTokens says which). The first token is never scored.
  int32_t bos = -1;
  /// Tokens per prefill call (Session::prefill's `chunk`; 0: the program's
  /// max rows).
  int64_t prefillChunk = 0;
  /// Called after each window: windows done, windows in all, and the
  /// perplexity of the windows done so far.
  std::function<void(int64_t done, int64_t total, double ppl)> progress;
};

struct PerplexityResult {
  int64_t ctx = 0;
  /// Windows scored.
  int64_t chunks = 0;
  /// Positions scored: chunks * (ctx - ctx/2 - 1).
  int64_t tokensScored = 0;
  /// -log p(token j + 1) at every scored position j, window after window.
  std::vector<double> nll;
  /// exp(mean nll), and its error exp(mean) * (the standard error of the
  /// mean NLL), as llama-perplexity reports "PPL = x +/- e".
  double ppl = 0.0, pplError = 0.0;

  /// With a base session: what llama-perplexity --kl-divergence reports.
  bool hasBase = false;
  /// The base's -log p(token j + 1), and KL(p_base || p_model) over the
  /// whole vocabulary, at every scored position.
  std::vector<double> baseNll, kl;
  double basePpl = 0.0, basePplError = 0.0;
  /// ppl - basePpl, its error from both errors and the covariance of the
  /// two mean NLLs (llama-perplexity's "Mean PPL(Q)-PPL(base)").
  double deltaPpl = 0.0, deltaPplError = 0.0;
  /// The mean KL divergence and its standard error, and the 90th, 99th and
  /// 99.9th percentiles of the per-position values (linear interpolation).
  double klMean = 0.0, klMeanError = 0.0;
  double klP90 = 0.0, klP99 = 0.0, klP999 = 0.0;
  /// The fraction of positions where both models' largest logit is the same
  /// token (llama-perplexity's "Same top p"), and its binomial error.
  double top1Agree = 0.0, top1AgreeError = 0.0;
};

/// Scores `tokens` with `model` (llama-perplexity's method, above); with
/// `base`, also compares model to base position by position
/// (--kl-divergence: KL(p_base || p_model), top-1 agreement, base ppl and
/// Delta ppl). Both sessions are reset before every window and left holding
/// the last window. Errors name the model: a ctx below 3 or beyond a model's
/// context, fewer tokens than one window, a base that is the same session,
/// has another vocabulary size, or embeds another tokenizer
/// (Model::tokenizerDigest), a token out of range.
Expected<PerplexityResult> perplexity(Session &model,
                                      const std::vector<int32_t> &tokens,
                                      const PerplexityOptions &options,
                                      Session *base = nullptr);

/// Whether `base` can be compared with `model` position by position: the
/// same logits width (Model::vocabSize) and the same embedded tokenizer, or
/// none in both (Model::tokenizerDigest); an error naming both otherwise.
/// perplexity() checks it too; a tool checks it before tokenizing.
Status checkPerplexityBase(const Model &model, const Model &base);

/// A text as llama-perplexity tokenizes it: tokenizer.encode(text,
/// addSpecial = true), i.e. BOS first where the tokenizer adds one and no
/// special token added anywhere else (an added token's text written in the
/// text still becomes that token, as HF's encode does), and that BOS id for
/// PerplexityOptions::bos (-1 when the tokenizer adds none).
struct PerplexityText {
  std::vector<int32_t> tokens;
  int32_t bos = -1;
};
Expected<PerplexityText> perplexityTokens(const Tokenizer &tokenizer,
                                          std::string_view text);

} // namespace fm
