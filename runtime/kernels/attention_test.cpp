// Checks attention against a double-precision reference: decode and
// prefill, grouped-query ratios, sliding windows, f32 and int8 caches.
#include "kernels/attention.h"

#include "base/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace fm::kernels {
namespace {

fm::rt::ThreadPool *poolOf(int threads) {
  static std::unique_ptr<fm::rt::ThreadPool> pools[4];
  if (!pools[threads])
    pools[threads] = std::make_unique<fm::rt::ThreadPool>(threads);
  return pools[threads].get();
}

using P = std::pair<int64_t, int64_t>;

struct Case {
  int64_t S, pos0, H, KVH, D, window;
  bool int8;
  float scale; // 0: 1/sqrt(D).
};

std::string describe(const Case &c) {
  return "S=" + std::to_string(c.S) + " pos0=" + std::to_string(c.pos0) +
         " H=" + std::to_string(c.H) + " KVH=" + std::to_string(c.KVH) +
         " D=" + std::to_string(c.D) + " window=" + std::to_string(c.window) +
         (c.int8 ? " int8" : " f32");
}

// Runs `c` on every available path, on 1, 2 and 3 threads, and compares
// with a double-precision reference.
void check(const Case &c, uint32_t seed) {
  SCOPED_TRACE(describe(c));
  const int64_t capacity = c.pos0 + c.S + 3; // The last rows must stay unread.
  const int64_t rowSize = c.KVH * c.D;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> q(c.S * c.H * c.D), k32(capacity * rowSize),
      v32(capacity * rowSize);
  std::vector<int8_t> k8(capacity * rowSize), v8(capacity * rowSize);
  const float kScale = 0.02f, vScale = 0.01f;
  for (float &x : q)
    x = dist(rng);
  for (int64_t i = 0; i < capacity * rowSize; ++i) {
    k8[i] = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
    v8[i] = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
    k32[i] = dist(rng);
    v32[i] = dist(rng);
  }
  // Poison the rows no query may see: NaN in f32, extreme values in int8.
  for (int64_t i = (c.pos0 + c.S) * rowSize; i < capacity * rowSize; ++i) {
    k32[i] = v32[i] = NAN;
    k8[i] = v8[i] = 127;
  }
  const float scale =
      c.scale != 0.0f ? c.scale : 1.0f / std::sqrt(static_cast<float>(c.D));
  auto keyAt = [&](int64_t j, int64_t g, int64_t d) -> double {
    int64_t i = j * rowSize + g * c.D + d;
    return c.int8 ? static_cast<double>(k8[i]) * kScale : k32[i];
  };
  auto valueAt = [&](int64_t j, int64_t g, int64_t d) -> double {
    int64_t i = j * rowSize + g * c.D + d;
    return c.int8 ? static_cast<double>(v8[i]) * vScale : v32[i];
  };

  std::vector<double> ref(c.S * c.H * c.D);
  // f32 scores carry an absolute error of a few ulp of scale * sum |q k|;
  // it moves the softmax weights, and so the outputs, by as much.
  double tolerance = 2e-5;
  for (int64_t s = 0; s < c.S; ++s)
    for (int64_t h = 0; h < c.H; ++h) {
      const int64_t i = c.pos0 + s, g = h / (c.H / c.KVH);
      int64_t j0 = c.window > 0 ? std::max<int64_t>(0, i - c.window + 1) : 0;
      std::vector<double> scores;
      double maxScore = -INFINITY;
      for (int64_t j = j0; j <= i; ++j) {
        double dot = 0.0, magnitude = 0.0;
        for (int64_t d = 0; d < c.D; ++d) {
          double term = q[(s * c.H + h) * c.D + d] * keyAt(j, g, d);
          dot += term;
          magnitude += std::fabs(term);
        }
        scores.push_back(dot * scale);
        tolerance = std::max(tolerance, 2e-5 + 1e-6 * magnitude * scale);
        maxScore = std::max(maxScore, scores.back());
      }
      double sum = 0.0;
      for (double &x : scores)
        sum += (x = std::exp(x - maxScore));
      for (int64_t d = 0; d < c.D; ++d) {
        double o = 0.0;
        for (int64_t j = j0; j <= i; ++j)
          o += scores[j - j0] / sum * valueAt(j, g, d);
        ref[(s * c.H + h) * c.D + d] = o;
      }
    }

  for (KernelIsa isa : {KernelIsa::Generic, KernelIsa::Avx2, KernelIsa::Avx512,
                        KernelIsa::Neon}) {
    if (!kernelIsaAvailable(isa))
      continue;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::string(kernelIsaName(isa)) +
                   " threads=" + std::to_string(threads));
      std::vector<float> out(c.S * c.H * c.D, NAN);
      AttentionArgs args;
      args.q = q.data();
      args.S = c.S;
      args.pos0 = c.pos0;
      args.H = c.H;
      args.KVH = c.KVH;
      args.D = c.D;
      args.scale = scale;
      args.window = c.window;
      args.k = c.int8 ? static_cast<const void *>(k8.data()) : k32.data();
      args.v = c.int8 ? static_cast<const void *>(v8.data()) : v32.data();
      args.capacity = capacity;
      args.int8 = c.int8;
      args.kScale = kScale;
      args.vScale = vScale;
      args.out = out.data();
      attentionOn(isa, args, poolOf(threads));
      // Outputs are weighted means of values of magnitude <= 1.27.
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_NEAR(out[i], ref[i], tolerance)
            << "at s=" << i / (c.H * c.D) << " h=" << i / c.D % c.H
            << " d=" << i % c.D;
    }
  }
}

TEST(Attention, DecodeSingleRow) {
  uint32_t seed = 1;
  for (int64_t D : {16, 48, 64, 128})
    for (auto [H, KVH] : {P{4, 4}, P{4, 2}, P{8, 2}})
      for (int64_t pos0 : {0, 1, 63, 64, 200})
        for (bool int8 : {false, true})
          check({1, pos0, H, KVH, D, 0, int8, 0.0f}, seed++);
}

TEST(Attention, PrefillAfterCachedPrefix) {
  uint32_t seed = 100;
  for (int64_t D : {16, 48, 64, 128})
    for (auto [H, KVH] : {P{4, 4}, P{4, 2}, P{8, 2}})
      for (auto [S, pos0] : {P{5, 13}, P{9, 0}, P{70, 30}})
        for (bool int8 : {false, true})
          check({S, pos0, H, KVH, D, 0, int8, 0.0f}, seed++);
}

TEST(Attention, SlidingWindow) {
  uint32_t seed = 200;
  for (int64_t window : {1, 2, 7, 64, 100, 1000})
    for (int64_t D : {16, 64})
      for (auto [S, pos0] : {P{1, 150}, P{1, 3}, P{12, 90}})
        for (bool int8 : {false, true})
          check({S, pos0, 8, 2, D, window, int8, 0.0f}, seed++);
}

TEST(Attention, OddHeadSizesAndManyHeadsPerGroup) {
  // Head sizes that are not a multiple of the vector width, and 32 query
  // heads on one KV head (more than one pass of grouped heads).
  check({3, 20, 32, 1, 40, 0, false, 0.0f}, 300);
  check({2, 77, 6, 3, 7, 0, true, 0.0f}, 301);
  check({4, 5, 2, 1, 1, 3, false, 0.0f}, 302);
}

TEST(Attention, DispatchedCallMatchesExplicitPath) {
  const int64_t S = 3, H = 4, KVH = 2, D = 32, capacity = 50;
  std::vector<float> q(S * H * D), k(capacity * KVH * D), v(k.size());
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (std::vector<float> *x : {&q, &k, &v})
    for (float &e : *x)
      e = dist(rng);
  std::vector<float> a(S * H * D), b(S * H * D);
  AttentionArgs args;
  args.q = q.data();
  args.S = S;
  args.pos0 = 40;
  args.H = H;
  args.KVH = KVH;
  args.D = D;
  args.scale = 0.2f;
  args.k = k.data();
  args.v = v.data();
  args.capacity = capacity;
  args.out = a.data();
  attention(args, nullptr);
  args.out = b.data();
  attentionOn(kernelIsaBest() == KernelIsa::Neon ? KernelIsa::Generic
                                                 : kernelIsaBest(),
              args, nullptr);
  EXPECT_EQ(a, b);
}

TEST(Attention, LargeScoresStayStable) {
  // Scores in the hundreds: a naive softmax overflows e^x.
  check({4, 100, 4, 2, 64, 0, false, 40.0f}, 400);
  check({1, 300, 4, 1, 128, 0, true, 40.0f}, 401);
}

} // namespace
} // namespace fm::kernels
