// The CPU's packed Moe asks for one matmul scratch region per session thread
// (its experts run in parallel, each on a region of its own), and checks
// that whole amount, threads included, against the Moe scratch bound that
// the loader applies to the thread-independent part.
#include "hal/cpu/CpuDevice.h"
#include "kernels/moe.h"
#include "kernels/qformat.h"
#include "kernels/qgemm.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fm::test {
namespace {

using kernels::QActivations;
using kernels::QuantFormat;
using kernels::QuantGrid;

constexpr int64_t K = 64, E = 2, I = 32;
const QuantFormat kFormat{4, 32, QuantGrid::Balanced};

// A packed Moe over `weights` (f32 router, each expert's gate and up
// stacked; the values do not matter: nothing runs) for up to `maxRows` rows
// on `threads` threads.
hal::MoeDesc moeDesc(hal::Buffer *weights, hal::Buffer *arena, int64_t maxRows,
                     int threads) {
  const uint64_t gateUpBytes = 2 * I * kernels::packedRowBytes(kFormat, K);
  const uint64_t downBytes = K * kernels::packedRowBytes(kFormat, I);
  auto packed = [&](uint64_t offset, int64_t N, int64_t KIn) {
    hal::WeightDesc w;
    w.buffer = weights;
    w.offset = offset;
    w.shape = {N, KIn};
    w.bytes = N * kernels::packedRowBytes(kFormat, KIn);
    w.kind = hal::WeightKind::Quant;
    w.format = kFormat;
    return w;
  };
  hal::MoeDesc d;
  d.x = {arena, 0, K, K};
  d.y = {arena, 4 * K, K, K};
  d.router.buffer = weights;
  d.router.shape = {E, K};
  d.router.bytes = 4 * E * K;
  uint64_t at = (d.router.bytes + 63) / 64 * 64;
  for (int64_t e = 0; e < E; ++e) {
    d.gate.push_back(packed(at, I, K));
    d.up.push_back(packed(at + gateUpBytes / 2, I, K));
    at += (gateUpBytes + 63) / 64 * 64;
    d.down.push_back(packed(at, K, I));
    at += (downBytes + 63) / 64 * 64;
  }
  d.topK = 1;
  d.maxRows = maxRows;
  d.activations = QActivations::Int8x2;
  d.threads = threads;
  return d;
}

struct Fixture {
  hal::CpuDevice device;
  std::vector<uint8_t> bytes = std::vector<uint8_t>(64 * 1024);
  std::unique_ptr<hal::Buffer> weights, arena;
  Fixture() {
    auto w = device.importWeights(bytes.data(), bytes.size());
    auto a = device.allocate(8 * K, hal::MemorySpace::Host);
    EXPECT_TRUE(w.isOk() && a.isOk());
    weights = std::move(*w);
    arena = std::move(*a);
  }
  // The kernel's scratchBytes, or -1 with the refusal in *message.
  int64_t scratch(int64_t maxRows, int threads, std::string *message = nullptr) {
    auto kernel = device.prepareMoe(
        moeDesc(weights.get(), arena.get(), maxRows, threads));
    if (!kernel) {
      if (message)
        *message = kernel.message();
      return -1;
    }
    return int64_t((*kernel)->scratchBytes());
  }
};

TEST(LoaderLimits, PackedMoeScratchHasARegionPerThread) {
  Fixture f;
  constexpr int64_t M = 33;
  const int64_t one = f.scratch(M, 1), two = f.scratch(M, 2),
                three = f.scratch(M, 3);
  ASSERT_GT(one, 0);
  // Each thread adds the same 64-byte aligned region, at least what the
  // largest matmul's GEMM needs for M rows of K inputs.
  const int64_t region = two - one;
  EXPECT_EQ(three - two, region);
  EXPECT_EQ(region % 64, 0);
  EXPECT_GE(size_t(region),
            kernels::qgemmScratchBytes(kFormat, M, K, QActivations::Int8x2));
}

TEST(LoaderLimits, PackedMoeScratchBoundCountsEveryThread) {
  // So many rows that a thread's matmul region is ~2^33 floats: one thread
  // is far under the bound; the threads that cross it are refused when the
  // session prepares the kernel, at exactly the first that would.
  Fixture f;
  constexpr int64_t M = int64_t(1) << 28;
  const int64_t one = f.scratch(M, 1), two = f.scratch(M, 2);
  ASSERT_GT(one, 0);
  const int64_t region = two - one;
  ASSERT_GT(region, 0);
  const int64_t bound = int64_t(4 * kernels::kMoeMaxScratchFloats);
  ASSERT_LT(two, bound);
  // The most threads whose scratch (one + (t - 1) regions) fits.
  const int64_t most = (bound - one) / region + 1;
  ASSERT_GT(most, 2);
  ASSERT_LT(most, 1 << 20);
  EXPECT_EQ(f.scratch(M, int(most)), one + (most - 1) * region);
  std::string message;
  EXPECT_EQ(f.scratch(M, int(most + 1), &message), -1);
  const std::string want = "cpu: moe needs " +
                           std::to_string((one + most * region) / 4) +
                           " floats of scratch on " + std::to_string(most + 1) +
                           " threads";
  EXPECT_EQ(message.rfind(want, 0), 0u) << message;
}

} // namespace
} // namespace fm::test
