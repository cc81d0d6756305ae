// Checks vitAttention on every path against the double-precision reference
// (vit_attention_reference.h): global and window layers, grids that the
// window does not divide, registers, relative positions, head widths that
// are not a multiple of the vector width, padded strides, 1-3 threads; and
// that the tolerance tells the wrong semantics apart.
#include "kernels/vit_attention.h"
#include "kernels/isa_test_paths.h"
#include "kernels/vit_attention_reference.h"

#include "base/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

struct Case {
  int64_t R, gh, gw, H, D, window;
  bool rel, padBias;
  int64_t extraLd = 0; // ldQkv = 3C + extraLd, ldOut = C + extraLd
};

std::string describe(const Case &c) {
  return "R=" + std::to_string(c.R) + " grid=" + std::to_string(c.gh) + "x" +
         std::to_string(c.gw) + " H=" + std::to_string(c.H) +
         " D=" + std::to_string(c.D) + " window=" + std::to_string(c.window) +
         (c.rel ? " rel" : "") + (c.padBias ? " padBias" : "") +
         (c.extraLd ? " strided" : "");
}

/// Inputs of a case: q, k, v and the tables in [-1, 1] (scores of O(1),
/// rel-pos terms of the same order).
struct Inputs {
  std::vector<float> qkv, relH, relW, pad;
  VitAttentionArgs args;

  Inputs(const Case &c, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const int64_t C = c.H * c.D, rows = c.R + c.gh * c.gw;
    const int64_t ld = 3 * C + c.extraLd;
    qkv.resize(rows * ld);
    for (float &x : qkv)
      x = dist(rng);
    const int64_t Sh = c.window ? c.window : c.gh, Sw = c.window ? c.window : c.gw;
    relH.resize((2 * Sh - 1) * c.D);
    relW.resize((2 * Sw - 1) * c.D);
    for (float &x : relH)
      x = 0.5f * dist(rng);
    for (float &x : relW)
      x = 0.5f * dist(rng);
    pad.resize(3 * C);
    for (float &x : pad)
      x = dist(rng);
    args.qkv = qkv.data();
    args.ldQkv = c.extraLd ? ld : 0;
    args.registers = c.R;
    args.gridH = c.gh;
    args.gridW = c.gw;
    args.H = c.H;
    args.D = c.D;
    args.scale = 1.0f / std::sqrt(float(c.D));
    args.window = c.window;
    args.relPosH = c.rel ? relH.data() : nullptr;
    args.relPosW = c.rel ? relW.data() : nullptr;
    args.padQkv = c.padBias ? pad.data() : nullptr;
    args.ldOut = c.extraLd ? C + c.extraLd : 0;
  }
};

// Outputs are convex combinations of values in [-1, 1]. The f32 scores
// carry ~1e-6 of error (D-term sums of O(1) products, e^x within 2 ulp),
// which moves each output by about as much; 2e-5 leaves room for that and
// is far below what a wrong pad, mean or bias does (checked below).
constexpr double kTolerance = 2e-5;

double maxDiff(const std::vector<float> &got, const std::vector<double> &want,
               const Case &c) {
  const int64_t C = c.H * c.D, ldOut = C + c.extraLd;
  double worst = 0;
  for (int64_t t = 0; t < c.R + c.gh * c.gw; ++t)
    for (int64_t j = 0; j < C; ++j)
      worst = std::max(worst, std::fabs(got[t * ldOut + j] - want[t * C + j]));
  return worst;
}

std::vector<float> run(KernelIsa isa, Inputs &in, const Case &c, int threads) {
  const int64_t C = c.H * c.D, ldOut = C + c.extraLd;
  std::vector<float> out((c.R + c.gh * c.gw) * ldOut, -7.0f);
  in.args.out = out.data();
  vitAttentionOn(isa, in.args, poolOf(threads));
  // Padding columns of a strided output stay untouched.
  for (int64_t t = 0; t < c.R + c.gh * c.gw; ++t)
    for (int64_t j = C; j < ldOut; ++j)
      EXPECT_EQ(out[t * ldOut + j], -7.0f);
  return out;
}

class VitAttentionPathTest : public testing::KernelPathTest {};

TEST_P(VitAttentionPathTest, MatchesReference) {
  const Case cases[] = {
      // Global layers: plain ViT, registers + rel-pos, several query blocks.
      {0, 5, 7, 2, 16, 0, false, false},
      {3, 6, 6, 3, 12, 0, true, false},
      {2, 11, 9, 2, 20, 0, true, false, 5},
      // Windows that do not divide the grid, registers, the qkv bias on
      // padded tokens, odd head widths, a non-square grid.
      {2, 10, 10, 4, 16, 4, true, true},
      {1, 7, 5, 2, 20, 3, true, true},
      {0, 9, 9, 2, 8, 4, true, false},
      {3, 10, 7, 1, 88, 4, false, true, 3},
      // A ViTDet-L-shaped head (D 64, window 7 over 16: 3 x 3 windows, the
      // last row and column mostly padding), and one window larger than the
      // grid.
      {4, 16, 16, 2, 64, 7, true, true},
      {2, 5, 6, 2, 16, 8, true, true},
  };
  uint32_t seed = 1;
  for (const Case &c : cases) {
    SCOPED_TRACE(describe(c));
    Inputs in(c, seed++);
    const std::vector<double> want = reference::vitAttention(in.args);
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("threads=" + std::to_string(threads));
      std::vector<float> got = run(GetParam(), in, c, threads);
      EXPECT_LE(maxDiff(got, want, c), kTolerance);
      if (first.empty())
        first = got;
      else
        EXPECT_EQ(got, first) << "results depend on the thread count";
    }
  }
}

// The tolerance discriminates: masking the padded keys, taking the
// registers from the first window, or scaling q in the rel-pos bias each
// move the outputs by far more than kTolerance on a padded, registered,
// rel-pos case; and window = grid is a global layer.
TEST_P(VitAttentionPathTest, ToleranceSeparatesWrongSemantics) {
  const Case c{2, 10, 10, 4, 16, 4, true, true};
  Inputs in(c, 42);
  std::vector<float> got = run(GetParam(), in, c, 2);
  ASSERT_LE(maxDiff(got, reference::vitAttention(in.args), c), kTolerance);
  reference::VitAblation masked, first, scaled;
  masked.maskPaddedKeys = true;
  first.registersFromFirstWindow = true;
  scaled.relFromScaledQ = true;
  for (auto ab : {masked, first, scaled})
    EXPECT_GT(maxDiff(got, reference::vitAttention(in.args, ab), c),
              100 * kTolerance);

  const Case whole{3, 6, 6, 2, 16, 6, true, true};
  Inputs w(whole, 43);
  std::vector<float> windowed = run(GetParam(), w, whole, 1);
  w.args.window = 0;
  std::vector<float> global = run(GetParam(), w, whole, 1);
  for (size_t i = 0; i < global.size(); ++i)
    ASSERT_NEAR(windowed[i], global[i], 1e-6) << "at " << i;
}

INSTANTIATE_TEST_SUITE_P(Paths, VitAttentionPathTest,
                         ::testing::ValuesIn(testing::compiledPaths()),
                         testing::kernelPathName);

TEST(VitAttentionDispatch, DispatchedCallMatchesGenericAndCountsFlops) {
  const Case c{2, 10, 10, 4, 16, 4, true, true};
  Inputs in(c, 7);
  std::vector<float> a = run(KernelIsa::Generic, in, c, 1);
  std::vector<float> b(a.size());
  in.args.out = b.data();
  vitAttention(in.args, poolOf(2));
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-5);
  // 100 patches + 2 registers in each of 9 windows, 4 heads of 16, 2 + 16
  // keys, 7 + 7 table rows: (2·18 + 14) multiply-adds per query and width.
  EXPECT_EQ(vitAttentionFlops(in.args), (100 + 2 * 9) * 4 * 16 * (2 * 18 + 14));
}

} // namespace
} // namespace fm::kernels
