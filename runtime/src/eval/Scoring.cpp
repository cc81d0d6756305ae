// fm::perplexity's arithmetic (eval/Scoring.h).
#include "eval/Scoring.h"

#include <algorithm>
#include <cmath>

namespace fm::eval {

RowSoftmax rowSoftmax(const float *logits, int64_t vocab) {
  RowSoftmax row;
  float best = logits[0];
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > best) {
      best = logits[i];
      row.argmax = i;
    }
  const double max = best;
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i)
    sum += std::exp(double(logits[i]) - max);
  row.logSumExp = max + std::log(sum);
  return row;
}

double klDivergence(const float *baseLogits, const RowSoftmax &base,
                    const float *logits, const RowSoftmax &row, int64_t vocab) {
  double kl = 0.0;
  for (int64_t i = 0; i < vocab; ++i) {
    const double logBase = double(baseLogits[i]) - base.logSumExp;
    const double logP = double(logits[i]) - row.logSumExp;
    const double pBase = std::exp(logBase);
    // p_base = 0 contributes nothing, whatever log p is (-inf included).
    if (pBase > 0.0)
      kl += pBase * (logBase - logP);
  }
  return kl;
}

MeanError meanAndError(double sum, double sum2, int64_t count) {
  MeanError m;
  if (count < 1)
    return m;
  m.mean = sum / double(count);
  const double variance = sum2 / double(count) - m.mean * m.mean;
  if (count > 1 && variance > 0.0)
    m.error = std::sqrt(variance / double(count - 1));
  return m;
}

double covarianceOfMeans(double sumA, double sumB, double sumAB, int64_t count) {
  if (count < 2)
    return 0.0;
  const double n = double(count);
  return (sumAB / n - (sumA / n) * (sumB / n)) / (n - 1.0);
}

double percentile(const std::vector<double> &sorted, double fraction) {
  if (fraction <= 0.0)
    return sorted.front();
  if (fraction >= 1.0)
    return sorted.back();
  const double at = fraction * double(sorted.size() - 1);
  const size_t i = static_cast<size_t>(at);
  const double t = at - double(i);
  const size_t j = std::min(i + 1, sorted.size() - 1);
  return (1.0 - t) * sorted[i] + t * sorted[j];
}

MeanError perplexityOf(double sum, double sum2, int64_t count) {
  const MeanError logPpl = meanAndError(sum, sum2, count);
  const double ppl = std::exp(logPpl.mean);
  // d exp(x) = exp(x) dx.
  return {ppl, ppl * logPpl.error};
}

MeanError deltaPerplexityOf(const ScoreSums &s) {
  const MeanError ppl = perplexityOf(s.nll, s.nll2, s.count);
  const MeanError base = perplexityOf(s.baseNll, s.baseNll2, s.count);
  const double cov = ppl.mean * base.mean *
                     covarianceOfMeans(s.nll, s.baseNll, s.nllBaseNll, s.count);
  const double variance =
      ppl.error * ppl.error + base.error * base.error - 2.0 * cov;
  return {ppl.mean - base.mean, variance > 0.0 ? std::sqrt(variance) : 0.0};
}

MeanError top1AgreementOf(const ScoreSums &s) {
  if (s.count < 1)
    return {};
  const double p = double(s.sameTop) / double(s.count);
  return {p, s.count > 1 ? std::sqrt(p * (1.0 - p) / double(s.count - 1)) : 0.0};
}

} // namespace fm::eval
