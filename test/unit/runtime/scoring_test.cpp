// fm::perplexity's arithmetic (runtime/src/eval/Scoring.h) against values
// worked out by hand: the NLL and KL of small distributions, and
// llama-perplexity's errors, covariance and percentiles.
#include "eval/Scoring.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace {

using namespace fm::eval;

const double kE = std::exp(1.0);

double nllOf(const std::vector<float> &logits, int32_t target) {
  const RowSoftmax row = rowSoftmax(logits.data(), int64_t(logits.size()));
  return tokenNll(logits.data(), row, target);
}

double klOf(const std::vector<float> &base, const std::vector<float> &model) {
  const int64_t n = int64_t(base.size());
  return klDivergence(base.data(), rowSoftmax(base.data(), n), model.data(),
                      rowSoftmax(model.data(), n), n);
}

TEST(Scoring, NllOfUniformRowIsLogVocab) {
  EXPECT_NEAR(nllOf({0, 0, 0, 0}, 2), std::log(4.0), 1e-15);
  EXPECT_NEAR(nllOf({7, 7, 7, 7, 7}, 0), std::log(5.0), 1e-15);
}

TEST(Scoring, NllIsMinusLogSoftmax) {
  // p(0) = e / (e + e^2 + e^3).
  const double want = -std::log(kE / (kE + kE * kE + kE * kE * kE));
  EXPECT_NEAR(nllOf({1, 2, 3}, 0), want, 1e-14);
  EXPECT_NEAR(nllOf({1, 2, 3}, 2), -std::log(kE * kE * kE / (kE + kE * kE + kE * kE * kE)),
              1e-14);
}

TEST(Scoring, LargeLogitsDoNotOverflow) {
  EXPECT_NEAR(nllOf({1000, 1000}, 1), std::log(2.0), 1e-12);
  EXPECT_NEAR(nllOf({-1000, -1000, -1000}, 0), std::log(3.0), 1e-12);
}

TEST(Scoring, ImpossibleTargetHasInfiniteNll) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(nllOf({0, -inf}, 0), 0.0);
  EXPECT_TRUE(std::isinf(nllOf({0, -inf}, 1)));
}

TEST(Scoring, ArgmaxIsTheFirstLargest) {
  EXPECT_EQ(rowSoftmax(std::vector<float>{1, 3, 3, 2}.data(), 4).argmax, 1);
  EXPECT_EQ(rowSoftmax(std::vector<float>{5, 5}.data(), 2).argmax, 0);
  EXPECT_EQ(rowSoftmax(std::vector<float>{-2, -1}.data(), 2).argmax, 1);
}

TEST(Scoring, KlOfKnownDistributions) {
  // p_base = (1/2, 1/2), p = (1/4, 3/4): 1/2 log 2 + 1/2 log(2/3).
  const float log3 = float(std::log(3.0));
  EXPECT_NEAR(klOf({0, 0}, {0, log3}), 0.5 * std::log(4.0 / 3.0), 1e-7);
  // It is not symmetric: KL(p || p_base) = 1/4 log(1/2) + 3/4 log(3/2).
  EXPECT_NEAR(klOf({0, log3}, {0, 0}), 0.25 * std::log(0.5) + 0.75 * std::log(1.5),
              1e-7);
  // Shifting a row's logits changes nothing.
  EXPECT_NEAR(klOf({10, 10}, {-5, log3 - 5}), 0.5 * std::log(4.0 / 3.0), 1e-6);
  EXPECT_NEAR(klOf({1, 2, 3}, {1, 2, 3}), 0.0, 1e-15);
}

TEST(Scoring, KlSkipsWhatTheBaseRulesOut) {
  const float inf = std::numeric_limits<float>::infinity();
  // p_base = (1, 0), p = (1/2, 1/2): log 2, the base's zero adds nothing
  // (not 0 * -inf).
  EXPECT_NEAR(klOf({0, -inf}, {0, 0}), std::log(2.0), 1e-15);
  EXPECT_TRUE(std::isinf(klOf({0, 0}, {0, -inf})));
}

TEST(Scoring, MeanAndStandardError) {
  // 1, 2, 3, 4: mean 2.5, E[x^2] - E[x]^2 = 7.5 - 6.25, over n - 1 = 3.
  const MeanError m = meanAndError(10, 30, 4);
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_NEAR(m.error, std::sqrt(1.25 / 3.0), 1e-15);
  EXPECT_EQ(meanAndError(3, 9, 1).error, 0.0); // one value: no error
  EXPECT_EQ(meanAndError(6, 12, 3).error, 0.0); // 2, 2, 2: no spread
  EXPECT_EQ(meanAndError(0, 0, 0).mean, 0.0);
}

TEST(Scoring, PercentileInterpolatesOrderStatistics) {
  const std::vector<double> v = {0, 10, 20, 30, 40};
  EXPECT_NEAR(percentile(v, 0.90), 36.0, 1e-12); // at 3.6
  EXPECT_NEAR(percentile(v, 0.99), 39.6, 1e-12);
  EXPECT_NEAR(percentile(v, 0.999), 39.96, 1e-12);
  EXPECT_NEAR(percentile(v, 0.5), 20.0, 1e-12);
  EXPECT_EQ(percentile(v, 0.0), 0.0);
  EXPECT_EQ(percentile(v, 1.0), 40.0);
  EXPECT_EQ(percentile({7}, 0.9), 7.0);
}

TEST(Scoring, PerplexityAndItsError) {
  // NLLs 1 and 3: mean 2, variance 1, error sqrt(1 / 1).
  const MeanError p = perplexityOf(4, 10, 2);
  EXPECT_NEAR(p.mean, kE * kE, 1e-12);
  EXPECT_NEAR(p.error, kE * kE, 1e-12);
  const MeanError two = perplexityOf(2 * std::log(2.0), 2 * std::log(2.0) * std::log(2.0), 2);
  EXPECT_NEAR(two.mean, 2.0, 1e-12);
  EXPECT_EQ(two.error, 0.0);
}

ScoreSums sumsOf(const std::vector<double> &nll, const std::vector<double> &baseNll,
                 const std::vector<bool> &same) {
  ScoreSums s;
  for (size_t i = 0; i < nll.size(); ++i)
    s.add(nll[i], baseNll[i], 0.0, same[i]);
  return s;
}

TEST(Scoring, DeltaPerplexityUsesTheCovariance) {
  // Model NLLs 1, 3 (ppl e^2 +- e^2), base 0, 2 (ppl e +- e): covariance of
  // the means 1, so the error is sqrt(e^4 + e^2 - 2 e^3) = e^2 - e.
  const MeanError d = deltaPerplexityOf(sumsOf({1, 3}, {0, 2}, {true, true}));
  EXPECT_NEAR(d.mean, kE * kE - kE, 1e-12);
  EXPECT_NEAR(d.error, kE * kE - kE, 1e-9);
  // A base without spread: no covariance, the model's error alone.
  const MeanError flat = deltaPerplexityOf(sumsOf({1, 3}, {1, 1}, {true, true}));
  EXPECT_NEAR(flat.mean, kE * kE - kE, 1e-12);
  EXPECT_NEAR(flat.error, kE * kE, 1e-9);
  // The same series: no difference, and no error.
  const MeanError same = deltaPerplexityOf(sumsOf({1, 3, 2}, {1, 3, 2}, {true, true, true}));
  EXPECT_NEAR(same.mean, 0.0, 1e-12);
  EXPECT_NEAR(same.error, 0.0, 1e-6);
}

TEST(Scoring, Top1AgreementAndItsBinomialError) {
  const MeanError t = top1AgreementOf(sumsOf({1, 1, 1, 1}, {1, 1, 1, 1},
                                             {true, false, true, true}));
  EXPECT_DOUBLE_EQ(t.mean, 0.75);
  EXPECT_NEAR(t.error, std::sqrt(0.75 * 0.25 / 3.0), 1e-15);
  EXPECT_EQ(top1AgreementOf(ScoreSums{}).mean, 0.0);
}

TEST(Scoring, SumsAccumulate) {
  ScoreSums s;
  s.add(2.0, 1.0, 0.5, true);
  s.add(4.0, 3.0, 1.5, false);
  EXPECT_EQ(s.count, 2);
  EXPECT_DOUBLE_EQ(s.nll, 6.0);
  EXPECT_DOUBLE_EQ(s.nll2, 20.0);
  EXPECT_DOUBLE_EQ(s.baseNll2, 10.0);
  EXPECT_DOUBLE_EQ(s.nllBaseNll, 14.0);
  EXPECT_DOUBLE_EQ(s.kl, 2.0);
  EXPECT_DOUBLE_EQ(s.kl2, 2.5);
  EXPECT_EQ(s.sameTop, 1);
}

} // namespace
