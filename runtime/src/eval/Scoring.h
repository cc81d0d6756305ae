// The arithmetic of fm::perplexity (fm/perplexity.h), apart from the sessions
// that produce the logits, so that it is tested on its own
// (test/unit/runtime/scoring_test.cpp): one row's log-softmax, NLL and
// KL divergence in double, and llama-perplexity's statistics over the rows.
#pragma once

#include <cstdint>
#include <vector>

namespace fm::eval {

/// One row of logits, as a distribution: log p_i = x_i - logSumExp, with
/// logSumExp = max + log(sum_i exp(x_i - max)) summed in double.
struct RowSoftmax {
  double logSumExp = 0.0;
  /// The first index of the largest logit (llama-perplexity's top-1).
  int64_t argmax = 0;
};
RowSoftmax rowSoftmax(const float *logits, int64_t vocab);

/// -log p(target) of a row whose softmax is `row`.
inline double tokenNll(const float *logits, const RowSoftmax &row,
                       int32_t target) {
  return row.logSumExp - double(logits[target]);
}

/// KL(p_base || p) = sum_i p_base,i (log p_base,i - log p_i) over the whole
/// vocabulary, in double (llama-perplexity --kl-divergence's, without its
/// 16-bit storage of the base's log-probabilities and their cut at -16).
double klDivergence(const float *baseLogits, const RowSoftmax &base,
                    const float *logits, const RowSoftmax &row, int64_t vocab);

/// A mean and the standard error of that mean, from the sum and the sum of
/// squares of `count` values: sqrt((E[x^2] - E[x]^2) / (count - 1)), as
/// llama-perplexity computes it; 0 when count < 2 or the variance is not
/// positive.
struct MeanError {
  double mean = 0.0;
  double error = 0.0;
};
MeanError meanAndError(double sum, double sum2, int64_t count);

/// The covariance of the means of two series of `count` values:
/// (E[ab] - E[a]E[b]) / (count - 1); 0 when count < 2.
double covarianceOfMeans(double sumA, double sumB, double sumAB, int64_t count);

/// The `fraction` percentile of `sorted` (ascending, not empty) by linear
/// interpolation between the order statistics at fraction * (n - 1), as
/// llama-perplexity and numpy.percentile's default do.
double percentile(const std::vector<double> &sorted, double fraction);

/// Sums over scored positions, and the statistics llama-perplexity reports
/// from them.
struct ScoreSums {
  int64_t count = 0;
  double nll = 0.0, nll2 = 0.0;         // the model's -log p(target)
  double baseNll = 0.0, baseNll2 = 0.0; // the base's
  double nllBaseNll = 0.0;              // their products
  double kl = 0.0, kl2 = 0.0;           // KL(p_base || p)
  int64_t sameTop = 0;                  // positions whose argmaxes agree

  /// One position without a base.
  void add(double nllValue) {
    ++count;
    nll += nllValue;
    nll2 += nllValue * nllValue;
  }
  /// One position with a base.
  void add(double nllValue, double baseNllValue, double klValue, bool same) {
    add(nllValue);
    baseNll += baseNllValue;
    baseNll2 += baseNllValue * baseNllValue;
    nllBaseNll += nllValue * baseNllValue;
    kl += klValue;
    kl2 += klValue * klValue;
    sameTop += same;
  }
};

/// exp(mean NLL) and its error exp(mean) * (error of the mean).
MeanError perplexityOf(double sum, double sum2, int64_t count);
/// ppl - basePpl and its error sqrt(e^2 + e_base^2 - 2 ppl basePpl cov),
/// cov the covariance of the two mean NLLs (llama-perplexity's Mean
/// PPL(Q)-PPL(base)).
MeanError deltaPerplexityOf(const ScoreSums &sums);
/// The fraction of positions whose argmaxes agree, and its binomial error
/// sqrt(p (1 - p) / (count - 1)).
MeanError top1AgreementOf(const ScoreSums &sums);

} // namespace fm::eval
