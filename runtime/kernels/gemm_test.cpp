// Checks the packed GEMM against a double-precision reference on every
// path: odd shapes around the tile, block and slab edges, bias and
// accumulate, 1-3 threads (bit-identical), and an empty K.
#include "kernels/gemm.h"
#include "kernels/isa_test_paths.h"

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

struct Problem {
  int64_t M, K, N;
  std::vector<float> x, w, bias, y0;
  std::vector<double> ref, mag; // x·wᵀ + bias, and the sum of |terms|.

  Problem(int64_t m, int64_t k, int64_t n, uint32_t seed)
      : M(m), K(k), N(n), x(m * k), w(n * k), bias(n), y0(m * n),
        ref(m * n), mag(m * n) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float &v : x)
      v = dist(rng);
    for (float &v : w)
      v = dist(rng);
    for (float &v : bias)
      v = dist(rng);
    for (float &v : y0)
      v = dist(rng);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = bias[j], a = std::fabs(bias[j]);
        for (int64_t l = 0; l < K; ++l) {
          double t = double(x[i * K + l]) * w[j * K + l];
          s += t;
          a += std::fabs(t);
        }
        ref[i * N + j] = s;
        mag[i * N + j] = a;
      }
  }
};

// f32 accumulation of K products: 1e-5 of the sum of |terms| is well above
// the rounding growth (about sqrt(K) ulp) and well below one wrong or
// missing term (on average the sum of |terms| / K).
void expectClose(const Problem &p, const std::vector<float> &y, bool bias,
                 bool accumulate) {
  for (int64_t i = 0; i < p.M * p.N; ++i) {
    const int64_t j = i % p.N;
    double expected = p.ref[i] - (bias ? 0.0 : p.bias[j]) +
                      (accumulate ? p.y0[i] : 0.0);
    double tolerance = 1e-5 * (p.mag[i] + std::fabs(p.y0[i])) + 1e-7;
    ASSERT_NEAR(y[i], expected, tolerance)
        << "at m=" << i / p.N << " n=" << j;
  }
}

class GemmPathTest : public testing::KernelPathTest {};

void runShapes(KernelIsa path, const std::vector<int64_t> &Ms,
               const std::vector<int64_t> &Ks, const std::vector<int64_t> &Ns) {
  uint32_t seed = 1;
  for (int64_t M : Ms)
    for (int64_t K : Ks)
      for (int64_t N : Ns) {
        Problem p(M, K, N, seed++);
        for (bool bias : {false, true})
          for (bool accumulate : {false, true}) {
            std::vector<float> first;
            for (int threads : {1, 2, 3}) {
              SCOPED_TRACE("M=" + std::to_string(M) + " K=" + std::to_string(K) +
                           " N=" + std::to_string(N) + " bias=" +
                           std::to_string(bias) + " accumulate=" +
                           std::to_string(accumulate) +
                           " threads=" + std::to_string(threads));
              std::vector<float> y = p.y0;
              gemmF32On(path, p.x.data(), M, K, p.w.data(), N,
                        bias ? p.bias.data() : nullptr, y.data(), accumulate,
                        poolOf(threads));
              expectClose(p, y, bias, accumulate);
              if (::testing::Test::HasFatalFailure())
                return;
              // Each output is summed in the same order on any thread count.
              if (first.empty())
                first = y;
              else
                ASSERT_EQ(y, first);
            }
          }
      }
}

TEST_P(GemmPathTest, MatchesReferenceAroundTileEdges) {
  runShapes(GetParam(), {1, 3, 13, 15, 29}, {1, 7, 64, 257},
            {1, 5, 17, 33, 65});
}

// Several x blocks (MC), K slices (KC) with a ragged tail, more column
// tiles than threads.
TEST_P(GemmPathTest, MatchesReferenceAcrossBlocks) {
  runShapes(GetParam(), {300}, {600}, {70, 130});
}

// More columns than one slab (NC = 2048 on x86) with few rows: the row
// split, and a slab edge.
TEST_P(GemmPathTest, MatchesReferenceAcrossSlabs) {
  runShapes(GetParam(), {4}, {9}, {2100});
}

TEST_P(GemmPathTest, EmptyKGivesBiasOrKeepsY) {
  std::vector<float> y = {1, 2, 3, 4, 5, 6};
  const float bias[3] = {10, 20, 30};
  float x = 0.0f, w = 0.0f;
  gemmF32On(GetParam(), &x, 2, 0, &w, 3, bias, y.data(), true, nullptr);
  EXPECT_EQ(y, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  gemmF32On(GetParam(), &x, 2, 0, &w, 3, nullptr, y.data(), false, nullptr);
  EXPECT_EQ(y, (std::vector<float>(6, 0.0f)));
}

INSTANTIATE_TEST_SUITE_P(Paths, GemmPathTest,
                         ::testing::ValuesIn(testing::compiledPaths()),
                         testing::kernelPathName);

TEST(GemmDispatch, DispatchedCallMatchesGeneric) {
  Problem p(40, 300, 50, 7);
  std::vector<float> a = p.y0, b = p.y0;
  gemmF32(p.x.data(), 40, 300, p.w.data(), 50, p.bias.data(), a.data(), true,
          poolOf(2));
  gemmF32On(KernelIsa::Generic, p.x.data(), 40, 300, p.w.data(), 50,
            p.bias.data(), b.data(), true, nullptr);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-4);
}

} // namespace
} // namespace fm::kernels
