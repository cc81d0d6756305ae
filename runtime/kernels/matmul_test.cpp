// Checks every matmul path this CPU can run against a double-precision
// reference, on odd shapes, with and without accumulation, on 1-3 threads;
// and each row of the matvec of 2-8 rows bit for bit the 1-row call's.
#include "kernels/matmul.h"
#include "kernels/isa_test_paths.h"

#include "base/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

// Half bits of a random value: normals over a few binades, some subnormals
// and signed zeros.
uint16_t randomHalf(std::mt19937 &rng) {
  uint16_t sign = (rng() & 1) ? 0x8000 : 0;
  switch (rng() % 16) {
  case 0:
    return sign | static_cast<uint16_t>(rng() % 0x400); // subnormal or 0
  default:
    // Exponents 10..16: magnitudes in [2^-5, 4).
    return sign |
           static_cast<uint16_t>((10 + rng() % 7) << 10 | (rng() % 0x400));
  }
}

// The value of half bits h, computed independently of halfToFloat.
double halfValue(uint16_t h) {
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0)
    return sign * std::ldexp(mantissa, -24);
  if (exponent == 31)
    return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

struct Problem {
  int64_t M, K, N;
  std::vector<float> x, w32, y0;
  std::vector<uint16_t> w16;
  // Reference products (without y0) and sum of |x·w| terms, per weight type.
  std::vector<double> ref32, ref16, mag32, mag16;

  Problem(int64_t m, int64_t k, int64_t n, uint32_t seed) : M(m), K(k), N(n) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    x.resize(M * K);
    w32.resize(N * K);
    w16.resize(N * K);
    y0.resize(M * N);
    for (float &v : x)
      v = dist(rng);
    for (float &v : w32)
      v = dist(rng);
    for (uint16_t &v : w16)
      v = randomHalf(rng);
    for (float &v : y0)
      v = dist(rng);
    ref32.assign(M * N, 0.0);
    ref16.assign(M * N, 0.0);
    mag32.assign(M * N, 0.0);
    mag16.assign(M * N, 0.0);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        for (int64_t l = 0; l < K; ++l) {
          double a = x[i * K + l];
          double p32 = a * w32[j * K + l], p16 = a * halfValue(w16[j * K + l]);
          ref32[i * N + j] += p32;
          mag32[i * N + j] += std::fabs(p32);
          ref16[i * N + j] += p16;
          mag16[i * N + j] += std::fabs(p16);
        }
  }
};

// f32 accumulation of K products: 1e-5 of the sum of |terms| is well above
// the rounding growth (about sqrt(K) ulp) and well below one wrong or
// missing term (on average the sum of |terms| / K).
void expectClose(const Problem &p, const std::vector<float> &y,
                 const std::vector<double> &ref, const std::vector<double> &mag,
                 bool accumulate) {
  for (int64_t i = 0; i < p.M * p.N; ++i) {
    double expected = ref[i] + (accumulate ? p.y0[i] : 0.0);
    double tolerance = 1e-5 * (mag[i] + std::fabs(p.y0[i])) + 1e-7;
    ASSERT_NEAR(y[i], expected, tolerance)
        << "at m=" << i / p.N << " n=" << i % p.N;
  }
}

class MatmulPathTest : public testing::KernelPathTest {};

void runShapes(MatmulPath path, const std::vector<int64_t> &Ms,
               const std::vector<int64_t> &Ks, const std::vector<int64_t> &Ns) {
  uint32_t seed = 1;
  for (int64_t M : Ms)
    for (int64_t K : Ks)
      for (int64_t N : Ns) {
        Problem p(M, K, N, seed++);
        for (bool accumulate : {false, true})
          for (int threads : {1, 2, 3}) {
            SCOPED_TRACE("M=" + std::to_string(M) + " K=" + std::to_string(K) +
                         " N=" + std::to_string(N) +
                         " accumulate=" + std::to_string(accumulate) +
                         " threads=" + std::to_string(threads));
            std::vector<float> y = p.y0;
            matmulF32On(path, p.x.data(), M, K, p.w32.data(), N, y.data(),
                        accumulate, poolOf(threads));
            expectClose(p, y, p.ref32, p.mag32, accumulate);
            y = p.y0;
            matmulF16WOn(path, p.x.data(), M, K, p.w16.data(), N, y.data(),
                         accumulate, poolOf(threads));
            expectClose(p, y, p.ref16, p.mag16, accumulate);
            if (::testing::Test::HasFatalFailure())
              return;
          }
      }
}

TEST_P(MatmulPathTest, MatchesReferenceOnOddShapes) {
  runShapes(GetParam(), {1, 2, 3, 7, 17}, {1, 5, 31, 64, 129, 1000},
            {1, 3, 33, 257});
}

// More rows than one prefill work unit (128) and a K spanning several
// K blocks with a ragged tail.
TEST_P(MatmulPathTest, MatchesReferenceOnLargerShapes) {
  runShapes(GetParam(), {1, 130}, {1537}, {70});
}

TEST_P(MatmulPathTest, EmptyKZeroesOrKeepsY) {
  std::vector<float> y = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  float x = 0.0f, w = 0.0f;
  uint16_t w16 = 0;
  matmulF32On(GetParam(), &x, 2, 0, &w, 3, y.data(), true, nullptr);
  EXPECT_EQ(y, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  matmulF16WOn(GetParam(), &x, 2, 0, &w16, 3, y.data(), false, nullptr);
  EXPECT_EQ(y, (std::vector<float>(6, 0.0f)));
}

// The matvec of 2 .. kMatvecMaxRows rows (speculative verification, batched
// decode) reads each tile of w once for all of them: row i of an m-row call
// must be bit for bit the 1-row call on row i alone (the decode step), for
// f32 and f16 weights, with and without accumulation, on 1 and 2 threads,
// and close to the double-precision reference. N covers whole and partial
// tiles of w rows; K vector tails.
TEST_P(MatmulPathTest, MatvecRowsAreOneRowCalls) {
  const MatmulPath path = GetParam();
  uint32_t seed = 900;
  for (int64_t M : {1, 2, 3, 5, int(kMatvecMaxRows)})
    for (int64_t K : {5, 64, 1000})
      for (int64_t N : {1, 7, 70}) {
        Problem p(M, K, N, seed++);
        for (bool f16 : {false, true})
          for (bool accumulate : {false, true})
            for (int threads : {1, 2}) {
              SCOPED_TRACE("M=" + std::to_string(M) + " K=" +
                           std::to_string(K) + " N=" + std::to_string(N) +
                           (f16 ? " f16" : " f32") +
                           " accumulate=" + std::to_string(accumulate) +
                           " threads=" + std::to_string(threads));
              auto call = [&](const float *x, int64_t rows, float *y,
                              int nThreads) {
                if (f16)
                  matmulF16WOn(path, x, rows, K, p.w16.data(), N, y,
                               accumulate, poolOf(nThreads));
                else
                  matmulF32On(path, x, rows, K, p.w32.data(), N, y,
                              accumulate, poolOf(nThreads));
              };
              std::vector<float> y = p.y0;
              call(p.x.data(), M, y.data(), threads);
              for (int64_t m = 0; m < M; ++m) {
                std::vector<float> y1(p.y0.begin() + m * N,
                                      p.y0.begin() + (m + 1) * N);
                call(p.x.data() + m * K, 1, y1.data(), 1);
                ASSERT_EQ(std::memcmp(y.data() + m * N, y1.data(),
                                      N * sizeof(float)),
                          0)
                    << "row " << m << " differs from the 1-row call";
              }
              expectClose(p, y, f16 ? p.ref16 : p.ref32,
                          f16 ? p.mag16 : p.mag32, accumulate);
              if (::testing::Test::HasFatalFailure())
                return;
            }
      }
}

INSTANTIATE_TEST_SUITE_P(Paths, MatmulPathTest,
                         ::testing::ValuesIn(testing::compiledPaths()),
                         testing::kernelPathName);

TEST(MatmulDispatch, BestPathIsAvailableAndNamed) {
  EXPECT_TRUE(kernelIsaAvailable(kernelIsaBest()));
  EXPECT_TRUE(kernelIsaAvailable(MatmulPath::Generic));
  EXPECT_STREQ(matmulPathName(), kernelIsaName(kernelIsaBest()));
  // Every path this CPU runs has its path tests (a test target without the
  // kernels' ISA macro would instantiate Generic alone).
  const std::vector<KernelIsa> compiled = testing::compiledPaths();
  for (KernelIsa isa : {KernelIsa::Avx2, KernelIsa::Avx512, KernelIsa::Neon})
    if (kernelIsaAvailable(isa)) {
      EXPECT_NE(std::find(compiled.begin(), compiled.end(), isa), compiled.end())
          << kernelIsaName(isa) << " runs here but has no path tests";
    }
#if defined(__x86_64__)
  EXPECT_FALSE(kernelIsaAvailable(MatmulPath::Neon));
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    EXPECT_EQ(kernelIsaBest(), MatmulPath::Avx512);
  }
#endif
}

TEST(MatmulDispatch, DispatchedCallMatchesGeneric) {
  Problem p(3, 300, 50, 99);
  std::vector<float> a = p.y0, b = p.y0;
  matmulF32(p.x.data(), 3, 300, p.w32.data(), 50, a.data(), true, poolOf(2));
  matmulF32On(MatmulPath::Generic, p.x.data(), 3, 300, p.w32.data(), 50,
              b.data(), true, nullptr);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-4);
  a = p.y0;
  b = p.y0;
  matmulF16W(p.x.data(), 3, 300, p.w16.data(), 50, a.data(), false, poolOf(2));
  matmulF16WOn(MatmulPath::Generic, p.x.data(), 3, 300, p.w16.data(), 50,
               b.data(), false, nullptr);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-4);
}

TEST(HalfToFloat, ExactForAllBitPatterns) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float f = halfToFloat(static_cast<uint16_t>(h));
    double expected = halfValue(static_cast<uint16_t>(h));
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(f)) << "h=" << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), expected) << "h=" << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << "h=" << h;
    }
  }
}

} // namespace
} // namespace fm::kernels
