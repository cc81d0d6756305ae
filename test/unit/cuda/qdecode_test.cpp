// The CUDA GEMM's host-checkable index math (runtime/hal/cuda/kernels/
// qdecode.h) without a GPU: element k of a packed row decoded through
// qQuant / qHalfBits equals the CPU's dequantizeRow for every qformat.h
// format, the accumulator mapping covers a block's 64 x 64 tile once, and
// the f16 range scale of large activations (gemmRangeScale).
#include "hal/cuda/kernels/qdecode.h"
#include "kernels/matmul.h"
#include "kernels/qformat.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace fm::hal::cuda {
namespace {

using kernels::QuantFormat;
using kernels::QuantGrid;

TEST(CudaGemmIndex, DecodeMatchesDequantizeRowForEveryFormat) {
  constexpr int64_t K = 384, N = 3;
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  int formats = 0;
  for (int bits : {2, 4, 8})
    for (int group : {32, 64, 128})
      for (QuantGrid grid : {QuantGrid::Balanced, QuantGrid::Affine}) {
        const QuantFormat f{bits, group, grid};
        const bool affine = grid == QuantGrid::Affine;
        SCOPED_TRACE(testing::Message() << "q" << bits << "g" << group << (affine ? "a" : "b"));
        std::vector<float> w(N * K);
        for (float &v : w)
          v = dist(rng);
        const size_t rowBytes = kernels::packedRowBytes(f, K);
        ASSERT_EQ(fm_cuda::qRowBytes(bits, group, affine, K), int64_t(rowBytes));
        std::vector<uint8_t> packed(N * rowBytes);
        kernels::quantizeRows(w.data(), N, K, f, packed.data());
        std::vector<float> ref(K);
        for (int64_t n = 0; n < N; ++n) {
          const uint8_t *row = packed.data() + n * rowBytes;
          kernels::dequantizeRow(row, f, K, ref.data());
          for (int64_t k = 0; k < K; ++k) {
            const uint32_t q = fm_cuda::qQuant(row, bits, group, k);
            ASSERT_LT(q, 1u << bits);
            float v = (float(q) - fm_cuda::qCenter(bits, affine)) *
                      kernels::halfToFloat(fm_cuda::qHalfBits(row, bits, group, K, k, false));
            if (affine)
              v += kernels::halfToFloat(fm_cuda::qHalfBits(row, bits, group, K, k, true));
            ASSERT_NEAR(v, ref[k], 1e-6f * (1.0f + std::fabs(ref[k]))) << "row " << n << " k " << k;
          }
        }
        ++formats;
      }
  EXPECT_EQ(formats, 18);
}

TEST(CudaGemmIndex, AccumulatorsCoverTheBlockTileOnce) {
  std::vector<int> hits(64 * 64, 0);
  for (int warp = 0; warp < 8; ++warp)
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
          for (int e = 0; e < 4; ++e) {
            int r = -1, c = -1;
            fm_cuda::gemmAccumulatorAt(lane, i, j, e, &r, &c);
            ASSERT_TRUE(r >= 0 && r < 32 && c >= 0 && c < 16) << r << "," << c;
            ++hits[(fm_cuda::gemmWarpRow(warp) + r) * 64 + fm_cuda::gemmWarpCol(warp) + c];
          }
  for (int p = 0; p < 64 * 64; ++p)
    ASSERT_EQ(hits[p], 1) << "element (" << p / 64 << ", " << p % 64 << ")";
}

TEST(CudaGemmIndex, RangeScaleIsOneWhileTheChunkFitsF16) {
  for (float a : {0.0f, 1e-30f, 1.0f, 3e4f, 65504.0f})
    EXPECT_EQ(fm_cuda::gemmRangeScale(a), 1.0f) << a;
  // inf and NaN are left as they are (the CPU's result is not finite either).
  EXPECT_EQ(fm_cuda::gemmRangeScale(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(fm_cuda::gemmRangeScale(std::numeric_limits<float>::quiet_NaN()), 1.0f);
}

TEST(CudaGemmIndex, RangeScaleIsAPowerOfTwoIntoTwoToTheFourteenToFifteen) {
  for (float a : {65504.5f, 65505.0f, 65536.0f, 1e5f, 3.3e6f, 1e20f, 1.7e38f,
                  std::numeric_limits<float>::max()}) {
    const float s = fm_cuda::gemmRangeScale(a);
    int e = 0;
    EXPECT_EQ(std::frexp(s, &e), 0.5f) << a << ": " << s << " is not a power of two";
    EXPECT_GE(a / s, 16384.0f) << a;
    EXPECT_LT(a / s, 32768.0f) << a;
    EXPECT_LT(kernels::halfToFloat(kernels::floatToHalf(a / s)), 65504.5f);
  }
}

// What the kernel does with a chunk past f16's range: x / s in f16 times
// the f16 weights, summed in f32, times s, is the f64 dot product to f16's
// rounding; unscaled the chunk's largest inputs are inf in f16.
TEST(CudaGemmIndex, ScaledChunkGivesTheDotProductWhereF16AloneOverflows) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float magnitude : {1e5f, 3e6f, 1e12f}) {
    float x[32], w[32], absmax = 0.0f;
    for (int c = 0; c < 32; ++c) {
      x[c] = dist(rng) * (c % 5 == 0 ? magnitude : 1.0f);
      w[c] = dist(rng) * 0.05f;
      absmax = std::max(absmax, std::fabs(x[c]));
    }
    ASSERT_TRUE(std::isinf(kernels::halfToFloat(kernels::floatToHalf(absmax))));
    const float s = fm_cuda::gemmRangeScale(absmax);
    double want = 0, mag = 0;
    float part = 0.0f;
    for (int c = 0; c < 32; ++c) {
      const float xh = kernels::halfToFloat(kernels::floatToHalf(x[c] / s));
      const float wh = kernels::halfToFloat(kernels::floatToHalf(w[c]));
      ASSERT_TRUE(std::isfinite(xh));
      part += xh * wh;
      want += double(x[c]) * w[c];
      mag += std::fabs(double(x[c]) * w[c]);
    }
    EXPECT_NEAR(double(part) * s, want, 2e-3 * mag) << magnitude;
  }
}

} // namespace
} // namespace fm::hal::cuda
