// Checks LayerNorm and the GELU family on every path against plain
// double-precision formulas (std::erf, std::tanh, std::exp).
#include "kernels/pointwise.h"
#include "kernels/isa_test_paths.h"

#include "base/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace fm::kernels {
namespace {

fm::rt::ThreadPool *poolOf(int threads) {
  static std::unique_ptr<fm::rt::ThreadPool> pools[4];
  if (!pools[threads])
    pools[threads] = std::make_unique<fm::rt::ThreadPool>(threads);
  return pools[threads].get();
}

double reference(Activation act, double x) {
  switch (act) {
  case Activation::Gelu:
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case Activation::GeluTanh:
    return 0.5 * x *
           (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  case Activation::QuickGelu:
    return x / (1.0 + std::exp(-1.702 * x));
  }
  return NAN;
}

class PointwisePathTest : public testing::KernelPathTest {};

// f32 inputs on [-12, 12] (every 1/1024, plus the float neighbours of 0):
// the approximations (erf's rational form, e^x within 2 ulp) and f32
// rounding stay within 3e-7 · max(1, |x|) of the exact function (measured:
// 2.5e-7, GELU near x = 4.2, from erf); a wrong
// constant (1.702, 0.044715, √2) is off by more than 1e-4 somewhere here.
TEST_P(PointwisePathTest, ActivationsMatchFormulas) {
  std::vector<float> x;
  for (int i = -12 * 1024; i <= 12 * 1024; ++i)
    x.push_back(static_cast<float>(i) / 1024.0f);
  for (float v : {1e-30f, -1e-30f, 1e-7f, -1e-7f, 0.0f, -0.0f})
    x.push_back(v);
  for (Activation act :
       {Activation::Gelu, Activation::GeluTanh, Activation::QuickGelu}) {
    SCOPED_TRACE(activationName(act));
    for (int threads : {1, 2}) {
      std::vector<float> y = x;
      // A large n takes the threaded path; the values repeat.
      std::vector<float> big;
      for (int rep = 0; rep < 3; ++rep)
        big.insert(big.end(), x.begin(), x.end());
      activateOn(GetParam(), act, big.data(), int64_t(big.size()),
                 poolOf(threads));
      activateOn(GetParam(), act, y.data(), int64_t(y.size()), nullptr);
      double worst = 0.0;
      for (size_t i = 0; i < x.size(); ++i) {
        double want = reference(act, x[i]);
        double err = std::fabs(y[i] - want) / std::max(1.0, std::fabs(double(x[i])));
        worst = std::max(worst, err);
        ASSERT_LE(err, 3e-7) << "x=" << x[i] << " got " << y[i] << " want " << want;
        ASSERT_EQ(big[i], y[i]) << "threaded result differs at x=" << x[i];
      }
      char text[32];
      std::snprintf(text, sizeof(text), "%.3g", worst);
      RecordProperty(std::string("worst_") + activationName(act), text);
    }
    // Tails: GELU(-12) ~ -2e-32, σ(1.702·-12) ~ 1e-9 relative; +12 is x.
    std::vector<float> t = {-30.0f, 30.0f, -200.0f, 200.0f};
    activateOn(GetParam(), act, t.data(), 4, nullptr);
    EXPECT_NEAR(t[0], 0.0f, 1e-5f);
    EXPECT_EQ(t[1], 30.0f);
    EXPECT_NEAR(t[2], 0.0f, 1e-5f);
    EXPECT_EQ(t[3], 200.0f);
  }
}

// Rows around the lane width, an offset mean (the two-pass variance must
// not cancel), in place and out of place, 1-3 threads.
TEST_P(PointwisePathTest, LayerNormMatchesReference) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t C : {1, 3, 8, 17, 64, 1000})
    for (float offset : {0.0f, 300.0f}) {
      const int64_t rows = 37;
      std::vector<float> x(rows * C), w(C), b(C);
      for (float &v : x)
        v = offset + normal(rng) * 2.0f;
      for (int64_t c = 0; c < C; ++c) {
        w[c] = 1.0f + 0.1f * normal(rng);
        b[c] = 0.2f * normal(rng);
      }
      const float eps = 1e-6f;
      std::vector<double> ref(rows * C);
      for (int64_t r = 0; r < rows; ++r) {
        double mean = 0, var = 0;
        for (int64_t c = 0; c < C; ++c)
          mean += x[r * C + c];
        mean /= double(C);
        for (int64_t c = 0; c < C; ++c)
          var += (x[r * C + c] - mean) * (x[r * C + c] - mean);
        var /= double(C);
        for (int64_t c = 0; c < C; ++c)
          ref[r * C + c] = (x[r * C + c] - mean) / std::sqrt(var + eps) * w[c] + b[c];
      }
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE("C=" + std::to_string(C) + " offset=" +
                     std::to_string(offset) + " threads=" + std::to_string(threads));
        std::vector<float> y(rows * C), inplace = x;
        layerNormOn(GetParam(), x.data(), rows, C, w.data(), b.data(), eps,
                    y.data(), poolOf(threads));
        layerNormOn(GetParam(), inplace.data(), rows, C, w.data(), b.data(), eps,
                    inplace.data(), poolOf(threads));
        ASSERT_EQ(y, inplace);
        // The normalized value carries the rounding of x − mean relative to
        // the row's spread: ~1 ulp of |offset| / std, plus f32 sums.
        const double tol = 4e-6 * (1.0 + offset / 2.0);
        for (int64_t i = 0; i < rows * C; ++i)
          ASSERT_NEAR(y[i], ref[i], tol * (std::fabs(w[i % C]) + 1.0)) << "at " << i;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Paths, PointwisePathTest,
                         ::testing::ValuesIn(testing::compiledPaths()),
                         testing::kernelPathName);

TEST(PointwiseDispatch, NamesMatchConfigFields) {
  EXPECT_STREQ(activationName(Activation::Gelu), "gelu");
  EXPECT_STREQ(activationName(Activation::GeluTanh), "gelu_tanh");
  EXPECT_STREQ(activationName(Activation::QuickGelu), "quick_gelu");
}

} // namespace
} // namespace fm::kernels
