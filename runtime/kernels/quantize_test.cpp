// Checks the packed formats bit by bit against qformat.h's documentation,
// the f16 rounding, exact round trips of quantization-aware-trained weights,
// and the error of quantizing random normal weights.
#include "kernels/isa.h"
#include "kernels/qmatmul_problem.h"
#include "kernels/quantize.h"
#include "kernels/quantize_reference.h"
#include "kernels/quantize_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace fm::kernels {
namespace {

using testing::allQuantFormats;
using testing::formatName;

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

// Weight k of a packed row, decoded from qformat.h's description alone.
double documentedValue(const uint8_t *row, QuantFormat f, int64_t K,
                       int64_t k) {
  const int64_t unit = f.group < 64 ? f.group : 64;
  const int64_t unitBytes = unit * f.bits / 8;
  const int64_t inUnit = k % unit;
  const uint8_t byte = row[(k / unit) * unitBytes + inUnit % unitBytes];
  const int plane = static_cast<int>(inUnit / unitBytes);
  const int q = (byte >> (f.bits * plane)) & ((1 << f.bits) - 1);
  const int64_t g = k / f.group, groups = K / f.group;
  const uint8_t *scales = row + K * f.bits / 8;
  auto half = [](const uint8_t *p) {
    return halfValue(static_cast<uint16_t>(p[0] | (p[1] << 8)));
  };
  const double s = half(scales + 2 * g);
  if (f.grid == QuantGrid::Affine)
    return q * s + half(scales + 2 * groups + 2 * g);
  return (q - ((1 << f.bits) - 1) / 2.0) * s;
}

TEST(QuantFormat, SizesAndBitsPerWeight) {
  EXPECT_EQ(packedRowBytes({2, 64, QuantGrid::Balanced}, 2048), 512u + 64u);
  EXPECT_EQ(packedRowBytes({2, 64, QuantGrid::Affine}, 2048), 512u + 128u);
  EXPECT_EQ(packedRowBytes({4, 32, QuantGrid::Balanced}, 64), 32u + 4u);
  EXPECT_EQ(packedRowBytes({8, 128, QuantGrid::Affine}, 256), 256u + 8u);
  EXPECT_DOUBLE_EQ(bitsPerWeight({2, 64, QuantGrid::Balanced}), 2.25);
  EXPECT_DOUBLE_EQ(bitsPerWeight({2, 32, QuantGrid::Affine}), 3.0);
  EXPECT_DOUBLE_EQ(bitsPerWeight({4, 128, QuantGrid::Balanced}), 4.125);
  for (QuantFormat f : allQuantFormats()) {
    const int64_t K = 5 * f.group;
    EXPECT_DOUBLE_EQ(8.0 * packedRowBytes(f, K) / K, bitsPerWeight(f))
        << formatName(f);
  }
}

TEST(QuantFormat, TwoBitLayoutByHand) {
  // One group of 64 at 2 bits: input i gets quant i % 4; byte k must hold
  // inputs k, 16+k, 32+k, 48+k in bits 0-1, 2-3, 4-5, 6-7.
  const QuantFormat f{2, 64, QuantGrid::Balanced};
  std::vector<float> w(64);
  for (int i = 0; i < 64; ++i)
    w[i] = static_cast<float>(i % 4) - 1.5f; // scale 1
  std::vector<uint8_t> packed(packedRowBytes(f, 64));
  QuantError e = quantizeRows(w.data(), 1, 64, f, packed.data());
  EXPECT_EQ(e.sqError, 0.0);
  for (int k = 0; k < 16; ++k) {
    uint8_t expect = 0;
    for (int j = 0; j < 4; ++j)
      expect |= static_cast<uint8_t>(((16 * j + k) % 4) << (2 * j));
    EXPECT_EQ(packed[k], expect) << "byte " << k;
  }
  EXPECT_EQ(packed[16], 0x00); // f16 1.0 = 0x3c00, little-endian
  EXPECT_EQ(packed[17], 0x3c);
}

TEST(QuantFormat, RowsMatchTheDocumentation) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  for (QuantFormat f : allQuantFormats()) {
    const int64_t N = 3, K = 5 * f.group;
    std::vector<float> w(N * K);
    for (float &v : w)
      v = dist(rng) + 0.01f; // an offset exercises affine minimums
    const size_t rowBytes = packedRowBytes(f, K);
    std::vector<uint8_t> packed(N * rowBytes);
    QuantError e = quantizeRows(w.data(), N, K, f, packed.data());
    std::vector<float> row(K);
    double err = 0.0, sq = 0.0;
    for (int64_t n = 0; n < N; ++n) {
      dequantizeRow(packed.data() + n * rowBytes, f, K, row.data());
      for (int64_t k = 0; k < K; ++k) {
        double doc = documentedValue(packed.data() + n * rowBytes, f, K, k);
        ASSERT_NEAR(row[k], doc, 1e-6 * std::fabs(doc) + 1e-12)
            << formatName(f) << " row " << n << " input " << k;
        err += (w[n * K + k] - doc) * (w[n * K + k] - doc);
        sq += double(w[n * K + k]) * w[n * K + k];
      }
    }
    EXPECT_NEAR(e.sqError, err, 1e-6 * err + 1e-15) << formatName(f);
    EXPECT_NEAR(e.sqSum, sq, 1e-9 * sq) << formatName(f);
  }
}

TEST(QuantFormat, HalfRounding) {
  // Every finite half survives the round trip; midpoints round to even.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00)
      continue;
    float v = static_cast<float>(halfValue(static_cast<uint16_t>(h)));
    ASSERT_EQ(floatToHalf(v), h) << std::hex << h;
  }
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);     // tie -> even
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02); // tie -> even
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00); // overflow
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000); // tie -> 0
  EXPECT_EQ(floatToHalf(0x1p-25f * 1.5f), 0x0001);
  EXPECT_EQ(floatToHalf(-0x1p-24f), 0x8001);
}

// Weights as quantization-aware training leaves them: each group on the
// balanced grid with an f16 scale, whichever levels it happens to use.
TEST(Quantize, GridWeightsRoundTripExactly) {
  std::mt19937 rng(3);
  for (int bits : {2, 4, 8})
    for (int group : {32, 64, 128}) {
      const QuantFormat f{bits, group, QuantGrid::Balanced};
      const int64_t N = 16, K = 4 * group;
      const int levels = 1 << bits;
      std::vector<float> w(N * K);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t g = 0; g < K / group; ++g) {
          // An f16 scale in [2^-12, 2^-2) with a random mantissa.
          uint16_t sh =
              static_cast<uint16_t>(((3 + rng() % 10) << 10) | (rng() % 1024));
          const float s = static_cast<float>(halfValue(sh));
          // Some groups use only the inner levels (for 8 bits every group
          // reaches an outer level: see quantize.h).
          const int spread =
              bits == 8 ? levels : ((n + g) % 3 == 0 ? 2 : levels);
          const int lo = levels / 2 - spread / 2;
          for (int64_t k = 0; k < group; ++k) {
            int q = lo + static_cast<int>(rng() % spread);
            if (bits == 8 && k == 0)
              q = (g % 2) ? 0 : levels - 1;
            w[n * K + g * group + k] = (q - (levels - 1) * 0.5f) * s;
          }
        }
      std::vector<uint8_t> packed(N * packedRowBytes(f, K));
      QuantError e = quantizeRows(w.data(), N, K, f, packed.data());
      EXPECT_EQ(e.sqError, 0.0) << formatName(f);
      std::vector<float> back(K);
      for (int64_t n = 0; n < N; ++n) {
        dequantizeRow(packed.data() + n * packedRowBytes(f, K), f, K,
                      back.data());
        for (int64_t k = 0; k < K; ++k)
          ASSERT_EQ(back[k], w[n * K + k])
              << formatName(f) << " " << n << "," << k;
      }
    }
}

TEST(Quantize, ZeroAndConstantGroups) {
  for (QuantFormat f : allQuantFormats()) {
    const int64_t K = 2 * f.group;
    std::vector<float> w(K, 0.0f);
    for (int64_t k = f.group; k < K; ++k)
      w[k] = 0.25f; // constant, f16-exact
    std::vector<uint8_t> packed(packedRowBytes(f, K));
    QuantError e = quantizeRows(w.data(), 1, K, f, packed.data());
    std::vector<float> back(K);
    dequantizeRow(packed.data(), f, K, back.data());
    for (int64_t k = 0; k < f.group; ++k)
      ASSERT_EQ(back[k], 0.0f) << formatName(f);
    if (f.grid == QuantGrid::Affine) {
      EXPECT_EQ(e.sqError, 0.0) << formatName(f);
    } else {
      // Balanced has no zero; a constant group lands on +-c*s exactly.
      EXPECT_LT(e.relativeRms(), 1e-3) << formatName(f);
    }
  }
}

// Random normal weights, as an untrained checkpoint: the searched scales
// beat plain absmax scaling, and the errors are what the grid allows.
TEST(Quantize, RandomNormalErrors) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int64_t N = 64, K = 1024;
  std::vector<float> w(N * K);
  for (float &v : w)
    v = 0.02f * dist(rng);
  std::printf("  relative RMS error of N(0, 0.02^2) weights:\n");
  for (QuantFormat f : allQuantFormats()) {
    std::vector<uint8_t> packed(N * packedRowBytes(f, K));
    QuantError e = quantizeRows(w.data(), N, K, f, packed.data());
    // Plain absmax scaling (balanced: max|w| on the outer level; affine:
    // min/max), for comparison.
    double naiveErr = 0.0;
    const int qmax = (1 << f.bits) - 1;
    for (int64_t g = 0; g < N * K / f.group; ++g) {
      const float *wg = w.data() + g * f.group;
      float lo = wg[0], hi = wg[0], amax = 0.0f;
      for (int k = 0; k < f.group; ++k) {
        lo = std::min(lo, wg[k]);
        hi = std::max(hi, wg[k]);
        amax = std::max(amax, std::fabs(wg[k]));
      }
      for (int k = 0; k < f.group; ++k) {
        double v;
        if (f.grid == QuantGrid::Balanced) {
          double s = amax / (qmax / 2.0);
          double q = std::min<double>(
              qmax, std::max(0.0, std::round(wg[k] / s + qmax / 2.0)));
          v = (q - qmax / 2.0) * s;
        } else {
          double s = (hi - lo) / qmax;
          v = std::round((wg[k] - lo) / s) * s + lo;
        }
        naiveErr += (wg[k] - v) * (wg[k] - v);
      }
    }
    const double rel = e.relativeRms(), naive = std::sqrt(naiveErr / e.sqSum);
    std::printf("    %-7s %5.3f bits/w  rel RMS %.4f  (absmax scale %.4f)\n",
                formatName(f).c_str(), bitsPerWeight(f), rel, naive);
    EXPECT_LE(rel, naive * 1.0001) << formatName(f);
    const double bound = f.bits == 2 ? 0.40 : f.bits == 4 ? 0.11 : 0.0075;
    EXPECT_LT(rel, bound) << formatName(f);
    EXPECT_GT(rel, bound / 20) << formatName(f); // not suspiciously exact
  }
}

// Weights that stress the search: groups at scales from f16-subnormal to
// near the f16 maximum, zero and constant groups, outliers, QAT grids, a NaN.
std::vector<float> awkwardWeights(QuantFormat f, int64_t N, int64_t K,
                                  uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(N * K);
  const float scales[] = {1e-7f, 3e-5f, 0.02f, 1.0f, 900.0f, 60000.0f};
  for (int64_t g = 0; g < N * K / f.group; ++g) {
    float *wg = w.data() + g * f.group;
    const int kind = static_cast<int>(rng() % 8);
    const float scale = scales[rng() % 6];
    for (int k = 0; k < f.group; ++k) {
      float v = scale * normal(rng);
      if (kind == 0)
        v = 0.0f;
      else if (kind == 1)
        v = scale;
      else if (kind == 2 && k == 5)
        v *= 40.0f;
      else if (kind == 3) // on the balanced grid, step 2^-8
        v = (static_cast<int>(rng() % (1u << f.bits)) -
             ((1 << f.bits) - 1) * 0.5f) * 0x1p-8f;
      else if (kind == 4)
        v += 3.0f * scale; // affine offset
      wg[k] = v;
    }
  }
  w[K + 7] = NAN;
  return w;
}

// The batched search packs exactly the bytes of the one-candidate-at-a-time
// search it replaced (quantize_reference.cpp), on every path this CPU runs,
// and reports the same error up to the summation order of the error sums.
TEST(Quantize, EveryPathPacksTheReferenceBytes) {
  struct Path {
    const char *name;
    const qsearch::SearchIsa *isa;
  };
  std::vector<Path> paths = {{"generic", &qsearch::kSearchGeneric}};
#if defined(__x86_64__) && defined(__GNUC__) // as quant.cmake builds them
  if (kernelIsaAvailable(KernelIsa::Avx2))
    paths.push_back({"avx2", &qsearch::kSearchAvx2});
  if (kernelIsaAvailable(KernelIsa::Avx512))
    paths.push_back({"avx512", &qsearch::kSearchAvx512});
#endif
  for (const Path &p : paths)
    std::printf("  checking %s\n", p.name);
  uint32_t seed = 40;
  for (QuantFormat f : allQuantFormats())
    for (bool awkward : {false, true}) {
      const int64_t N = 24, K = 6 * f.group;
      std::vector<float> w = awkward ? awkwardWeights(f, N, K, seed++)
                                     : std::vector<float>(N * K);
      if (!awkward) {
        std::mt19937 rng(seed++);
        std::normal_distribution<float> normal(0.0f, 0.02f);
        for (float &v : w)
          v = normal(rng);
      }
      const size_t bytes = N * packedRowBytes(f, K);
      std::vector<uint8_t> ref(bytes), out(bytes);
      const QuantError er =
          reference::quantizeRowsReference(w.data(), N, K, f, ref.data());
      for (const Path &p : paths) {
        std::fill(out.begin(), out.end(), 0xa5);
        const QuantError e =
            qsearch::quantizeRowsWith(*p.isa, w.data(), N, K, f, out.data());
        ASSERT_EQ(out, ref) << p.name << " " << formatName(f)
                            << (awkward ? " awkward" : " normal");
        if (!awkward) { // (the awkward rows hold a NaN)
          EXPECT_NEAR(e.sqError, er.sqError, 1e-12 * er.sqError);
          EXPECT_NEAR(e.sqSum, er.sqSum, 1e-12 * er.sqSum);
        }
      }
      std::vector<uint8_t> best(bytes);
      quantizeRows(w.data(), N, K, f, best.data());
      ASSERT_EQ(best, ref) << "dispatched " << formatName(f);
    }
}

} // namespace
} // namespace fm::kernels
