// The CUDA GEMM's host-checkable index math (runtime/hal/cuda/kernels/
// qdecode.h) without a GPU: element k of a packed row decoded through
// qQuant / qHalfBits equals the CPU's dequantizeRow for every qformat.h
// format, and the accumulator mapping covers a block's 64 x 64 tile once.
#include "hal/cuda/kernels/qdecode.h"
#include "kernels/matmul.h"
#include "kernels/qformat.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

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

} // namespace
} // namespace fm::hal::cuda
