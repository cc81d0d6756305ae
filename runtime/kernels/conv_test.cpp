// Checks the patch embedding, the 3x3 convolution and the adapter's average
// pooling against explicit double-precision loops over taps and pixels.
#include "kernels/conv.h"

#include "base/ThreadPool.h"

#include <gtest/gtest.h>

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

std::vector<float> random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

// A sum of n products of values in [-1, 1] in f32: within n · 2^-22 of
// the double sum (a few ulp per term, far below one wrong tap).
double sumTolerance(int64_t n) { return 4e-7 * double(n) + 1e-6; }

TEST(PatchEmbed, MatchesConvolutionLoops) {
  struct Case {
    int64_t channels, H, W, p, C;
    bool pos;
  };
  // Square and not, a remainder that Conv2d ignores, one channel.
  for (Case c : {Case{3, 16, 16, 4, 8, true}, Case{3, 14, 21, 7, 5, false},
                 Case{3, 19, 10, 3, 33, true}, Case{1, 6, 6, 2, 3, true}}) {
    SCOPED_TRACE("H=" + std::to_string(c.H) + " W=" + std::to_string(c.W) +
                 " p=" + std::to_string(c.p));
    const int64_t gh = c.H / c.p, gw = c.W / c.p;
    auto image = random(c.channels * c.H * c.W, 1);
    auto weight = random(c.C * c.channels * c.p * c.p, 2);
    auto bias = random(c.C, 3);
    auto pos = random(gh * gw * c.C, 4);
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      std::vector<float> out(gh * gw * c.C, NAN);
      patchEmbed(image.data(), c.channels, c.H, c.W, c.p, weight.data(), c.C,
                 bias.data(), c.pos ? pos.data() : nullptr, out.data(),
                 poolOf(threads));
      for (int64_t py = 0; py < gh; ++py)
        for (int64_t px = 0; px < gw; ++px)
          for (int64_t o = 0; o < c.C; ++o) {
            const int64_t t = py * gw + px;
            double want = bias[o] + (c.pos ? pos[t * c.C + o] : 0.0);
            for (int64_t ch = 0; ch < c.channels; ++ch)
              for (int64_t r = 0; r < c.p; ++r)
                for (int64_t s = 0; s < c.p; ++s)
                  want += double(weight[((o * c.channels + ch) * c.p + r) * c.p + s]) *
                          image[(ch * c.H + py * c.p + r) * c.W + px * c.p + s];
            ASSERT_NEAR(out[t * c.C + o], want,
                        sumTolerance(c.channels * c.p * c.p))
                << "patch " << py << "," << px << " channel " << o;
          }
      if (first.empty())
        first = out;
      else
        ASSERT_EQ(out, first) << "threads=" << threads;
    }
  }
}

TEST(Conv3x3, MatchesConvolutionLoops) {
  struct Case {
    int64_t gh, gw, Cin, Cout;
    bool bias;
  };
  for (Case c : {Case{5, 7, 3, 4, true}, Case{1, 1, 2, 3, true},
                 Case{10, 10, 17, 9, false}, Case{3, 2, 40, 33, true}}) {
    SCOPED_TRACE("grid " + std::to_string(c.gh) + "x" + std::to_string(c.gw) +
                 " Cin=" + std::to_string(c.Cin) + " Cout=" + std::to_string(c.Cout));
    auto x = random(c.gh * c.gw * c.Cin, 5);
    auto weight = random(c.Cout * c.Cin * 9, 6);
    auto bias = random(c.Cout, 7);
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      std::vector<float> y(c.gh * c.gw * c.Cout, NAN);
      conv3x3(x.data(), c.gh, c.gw, c.Cin, weight.data(), c.Cout,
              c.bias ? bias.data() : nullptr, y.data(), poolOf(threads));
      for (int64_t gy = 0; gy < c.gh; ++gy)
        for (int64_t gx = 0; gx < c.gw; ++gx)
          for (int64_t o = 0; o < c.Cout; ++o) {
            double want = c.bias ? bias[o] : 0.0;
            for (int64_t i = 0; i < c.Cin; ++i)
              for (int64_t dy = 0; dy < 3; ++dy)
                for (int64_t dx = 0; dx < 3; ++dx) {
                  const int64_t sy = gy + dy - 1, sx = gx + dx - 1;
                  if (sy < 0 || sy >= c.gh || sx < 0 || sx >= c.gw)
                    continue;
                  want += double(weight[((o * c.Cin + i) * 3 + dy) * 3 + dx]) *
                          x[(sy * c.gw + sx) * c.Cin + i];
                }
            ASSERT_NEAR(y[(gy * c.gw + gx) * c.Cout + o], want,
                        sumTolerance(9 * c.Cin))
                << "at " << gy << "," << gx << " channel " << o;
          }
      if (first.empty())
        first = y;
      else
        ASSERT_EQ(y, first) << "threads=" << threads;
    }
  }
}

TEST(AdapterAvgPool, StrideAndKernelFormula) {
  // Apple's 672² / patch 14: g = 48 to 144 tokens.
  EXPECT_EQ(adapterPoolStride(48, 12), 4);
  EXPECT_EQ(adapterPoolKernel(48, 12), 4);
  EXPECT_EQ(adapterPoolStride(10, 3), 3);
  EXPECT_EQ(adapterPoolKernel(10, 3), 4);
  EXPECT_EQ(adapterPoolStride(7, 2), 3);
  EXPECT_EQ(adapterPoolKernel(7, 2), 4);
  EXPECT_EQ(adapterPoolKernel(5, 1), 5);
  EXPECT_EQ(adapterPoolKernel(6, 6), 1);
  for (int64_t g = 1; g <= 50; ++g)
    for (int64_t go = 1; go <= g; ++go) {
      const int64_t s = adapterPoolStride(g, go), k = adapterPoolKernel(g, go);
      ASSERT_GE(s, 1);
      ASSERT_GE(k, s) << "windows must cover the grid: g=" << g << " gOut=" << go;
      ASSERT_EQ((go - 1) * s + k, g) << "g=" << g << " gOut=" << go;
    }
}

TEST(AdapterAvgPool, MatchesWindowMeans) {
  for (auto [g, go, D] : {std::tuple<int64_t, int64_t, int64_t>{10, 3, 5},
                          {7, 2, 16}, {5, 1, 3}, {6, 6, 2}, {12, 5, 33}}) {
    SCOPED_TRACE("g=" + std::to_string(g) + " gOut=" + std::to_string(go));
    auto x = random(g * g * D, uint32_t(g * 100 + go));
    const int64_t s = adapterPoolStride(g, go), k = adapterPoolKernel(g, go);
    for (int threads : {1, 2}) {
      std::vector<float> y(go * go * D, NAN);
      adapterAvgPool(x.data(), g, D, go, y.data(), poolOf(threads));
      for (int64_t oy = 0; oy < go; ++oy)
        for (int64_t ox = 0; ox < go; ++ox)
          for (int64_t d = 0; d < D; ++d) {
            double want = 0;
            for (int64_t ky = 0; ky < k; ++ky)
              for (int64_t kx = 0; kx < k; ++kx)
                want += x[((oy * s + ky) * g + ox * s + kx) * D + d];
            want /= double(k * k);
            ASSERT_NEAR(y[(oy * go + ox) * D + d], want, 1e-6)
                << "token " << oy << "," << ox << " channel " << d;
          }
    }
  }
  // gOut = g is the identity.
  auto x = random(4 * 4 * 3, 9);
  std::vector<float> y(x.size());
  adapterAvgPool(x.data(), 4, 3, 4, y.data(), nullptr);
  EXPECT_EQ(x, y);
}

} // namespace
} // namespace fm::kernels
