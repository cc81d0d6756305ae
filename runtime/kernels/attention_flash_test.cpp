// Checks the blocked (flash-style) attention against the double-precision
// reference of attention_test.cpp and against attention() itself: prefill
// with and without a cached prefix, long prompts (many query and key
// blocks), grouped-query ratios from 1 to 32 heads per KV head, sliding
// windows, f32 and int8 caches, odd head sizes, 1-3 threads, every path.
#include "kernels/attention_flash.h"

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
  int64_t S, pos0, H, KVH, D, window;
  bool int8;
};

std::string describe(const Case &c) {
  return "S=" + std::to_string(c.S) + " pos0=" + std::to_string(c.pos0) +
         " H=" + std::to_string(c.H) + " KVH=" + std::to_string(c.KVH) +
         " D=" + std::to_string(c.D) + " window=" + std::to_string(c.window) +
         (c.int8 ? " int8" : " f32");
}

void check(const Case &c, uint32_t seed) {
  SCOPED_TRACE(describe(c));
  const int64_t capacity = c.pos0 + c.S + 3; // the last rows stay unread
  const int64_t rowSize = c.KVH * c.D;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> q(c.S * c.H * c.D), k32(capacity * rowSize),
      v32(capacity * rowSize);
  std::vector<int8_t> k8(capacity * rowSize), v8(capacity * rowSize);
  const float kScale = 0.02f, vScale = 0.01f;
  for (float &x : q)
    x = 2.0f * dist(rng);
  for (int64_t i = 0; i < capacity * rowSize; ++i) {
    k8[i] = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
    v8[i] = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
    k32[i] = dist(rng);
    v32[i] = dist(rng);
  }
  // Rows no query may see: NaN in f32, extreme values in int8.
  for (int64_t i = (c.pos0 + c.S) * rowSize; i < capacity * rowSize; ++i) {
    k32[i] = v32[i] = NAN;
    k8[i] = v8[i] = 127;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  auto keyAt = [&](int64_t j, int64_t g, int64_t d) -> double {
    const int64_t i = j * rowSize + g * c.D + d;
    return c.int8 ? static_cast<double>(k8[i]) * kScale : k32[i];
  };
  auto valueAt = [&](int64_t j, int64_t g, int64_t d) -> double {
    const int64_t i = j * rowSize + g * c.D + d;
    return c.int8 ? static_cast<double>(v8[i]) * vScale : v32[i];
  };
  std::vector<double> ref(c.S * c.H * c.D);
  double tolerance = 2e-5;
  for (int64_t s = 0; s < c.S; ++s)
    for (int64_t h = 0; h < c.H; ++h) {
      const int64_t i = c.pos0 + s, g = h / (c.H / c.KVH);
      const int64_t j0 =
          c.window > 0 ? std::max<int64_t>(0, i - c.window + 1) : 0;
      std::vector<double> scores;
      double maxScore = -INFINITY;
      for (int64_t j = j0; j <= i; ++j) {
        double dot = 0.0, magnitude = 0.0;
        for (int64_t d = 0; d < c.D; ++d) {
          const double term = q[(s * c.H + h) * c.D + d] * keyAt(j, g, d);
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
  std::vector<float> perRow(c.S * c.H * c.D);
  args.out = perRow.data();
  attention(args, nullptr);
  for (KernelIsa isa : {KernelIsa::Generic, KernelIsa::Avx2, KernelIsa::Avx512,
                        KernelIsa::Neon}) {
    if (!kernelIsaAvailable(isa))
      continue;
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::string(kernelIsaName(isa)) +
                   " threads=" + std::to_string(threads));
      std::vector<float> out(c.S * c.H * c.D, NAN);
      args.out = out.data();
      attentionBlockedOn(isa, args, poolOf(threads));
      for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_NEAR(out[i], ref[i], tolerance) << "at " << i;
        ASSERT_NEAR(out[i], perRow[i], tolerance) << "vs attention() at " << i;
      }
      if (threads == 1)
        first = out;
      else
        ASSERT_EQ(out, first) << "depends on the thread count";
    }
  }
}

TEST(AttentionBlocked, PrefillAfterCachedPrefix) {
  uint32_t seed = 1;
  for (int64_t D : {16, 64, 128})
    for (auto [H, KVH] : {std::pair<int64_t, int64_t>{4, 4}, {8, 2}, {16, 2}})
      for (auto [S, pos0] : {std::pair<int64_t, int64_t>{5, 13}, {40, 0},
                             {70, 30}})
        for (bool int8 : {false, true})
          check({S, pos0, H, KVH, D, 0, int8}, seed++);
}

TEST(AttentionBlocked, LongPrompts) {
  check({300, 0, 8, 2, 64, 0, false}, 100);
  check({257, 130, 4, 1, 128, 0, true}, 101);
  check({200, 0, 32, 1, 32, 0, false}, 102); // 32 heads on one KV head
}

TEST(AttentionBlocked, SlidingWindow) {
  uint32_t seed = 200;
  for (int64_t window : {1, 7, 64, 100})
    for (auto [S, pos0] : {std::pair<int64_t, int64_t>{12, 90}, {150, 0}})
      for (bool int8 : {false, true})
        check({S, pos0, 8, 2, 32, window, int8}, seed++);
}

TEST(AttentionBlocked, OddShapes) {
  check({3, 20, 6, 3, 7, 0, true}, 300);
  check({17, 5, 2, 1, 1, 3, false}, 301);
  check({1, 77, 4, 2, 40, 0, false}, 302); // one row (decode-sized)
}

} // namespace
} // namespace fm::kernels
