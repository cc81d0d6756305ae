// Quantized matmul benchmarks: the decode matvec (GB/s of packed weight
// bytes, scales included) hot (one matrix, cache-resident) and cold (copies
// cycled through > LLC, as in a decode step that streams every layer from
// DRAM), on 1 and 2 threads; the activation modes side by side (int8x2,
// the default; int8; f32 on AVX-512) and f32 weights; and a prefill matmul
// (M = 128, GFLOP/s); the matvec of 2-8 rows beside 1 (BM_QMatvecRows).
// Where the AVX-512 VNNI kernel takes its planes with
// GFNI, the decode shapes also run its shift-and-mask version in the same
// run (planes:1), the baseline of that change.
//
// Quants are random bytes with valid f16 scales: the kernels' speed does
// not depend on the values, and packing 100+ MB through the quantizer's
// search would dominate the run. Buffers are 64-byte aligned like the
// runtime's mmapped weights. Linked into fm_kernels_bench (whose main is in
// matmul_bench.cpp).
#include "kernels/matmul.h"
#include "kernels/qmatmul.h"
#include "kernels/quantize.h"
#include "base/ThreadPool.h"
#include "cold_bytes.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using fm::kernels::QActivations;
using fm::kernels::QuantFormat;
using fm::kernels::QuantGrid;

// Copies of w together at least this large (cold_bytes.h).
const int64_t kColdBytes = fm::bench::coldBytes();

fm::rt::ThreadPool *poolOf(int threads) {
  static std::unique_ptr<fm::rt::ThreadPool> pools[3];
  if (!pools[threads])
    pools[threads] = std::make_unique<fm::rt::ThreadPool>(threads);
  return pools[threads].get();
}

struct AlignedBytes {
  explicit AlignedBytes(int64_t n)
      : data(static_cast<uint8_t *>(
            std::aligned_alloc(64, static_cast<size_t>((n + 63) / 64 * 64)))) {}
  ~AlignedBytes() { std::free(data); }
  AlignedBytes(const AlignedBytes &) = delete;
  AlignedBytes &operator=(const AlignedBytes &) = delete;
  uint8_t *data;
};

// N packed rows of K inputs: random quants, scales (and mins) ~0.01.
void fillPacked(uint8_t *w, QuantFormat f, int64_t N, int64_t K,
                std::mt19937 &rng) {
  const int64_t rowBytes = static_cast<int64_t>(packedRowBytes(f, K));
  const int64_t qBytes = fm::kernels::quantBytes(f, K);
  const int64_t halves = rowBytes - qBytes;
  for (int64_t n = 0; n < N; ++n) {
    uint8_t *row = w + n * rowBytes;
    for (int64_t i = 0; i < qBytes; i += 4) {
      uint32_t r = rng();
      std::memcpy(row + i, &r, 4);
    }
    for (int64_t i = 0; i < halves; i += 2) {
      uint16_t h = fm::kernels::floatToHalf(0.01f + 1e-4f * (rng() % 64));
      std::memcpy(row + qBytes + i, &h, 2);
    }
  }
}

// Args: M, N (out), K (in), bits (0 = f32 weights), group, threads, cold,
// act (0 = int8x2, 1 = int8, 2 = f32 activations), planes (0 = qmatmul's
// own path, 1 = qmatmulAvx512ShiftMaskOn).
void BM_QMatmul(benchmark::State &state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const int bits = static_cast<int>(state.range(3));
  const QuantFormat f{bits ? bits : 2, static_cast<int>(state.range(4)),
                      QuantGrid::Balanced};
  const int threads = static_cast<int>(state.range(5));
  const bool cold = state.range(6) != 0;
  const QActivations act = static_cast<QActivations>(state.range(7));
  const bool shiftMask = state.range(8) != 0;
  if (shiftMask && !fm::kernels::qmatmulAvx512ShiftMaskAvailable()) {
    state.SkipWithError("no AVX-512 VNNI kernel with GFNI planes here");
    return;
  }
  const int64_t weightBytes =
      bits ? N * static_cast<int64_t>(packedRowBytes(f, K)) : N * K * 4;
  const int64_t copies =
      cold ? (kColdBytes + weightBytes - 1) / weightBytes : 1;
  std::mt19937 rng(1);
  std::vector<std::unique_ptr<AlignedBytes>> w;
  for (int64_t c = 0; c < copies; ++c) {
    w.push_back(std::make_unique<AlignedBytes>(weightBytes));
    if (c > 0) { // the values do not matter, only that each copy is apart
      std::memcpy(w.back()->data, w[0]->data, static_cast<size_t>(weightBytes));
    } else if (bits) {
      fillPacked(w.back()->data, f, N, K, rng);
    } else {
      float *wf = reinterpret_cast<float *>(w.back()->data);
      for (int64_t i = 0; i < N * K; ++i)
        wf[i] =
            1e-3f * static_cast<float>(static_cast<int>(rng() % 2001) - 1000);
    }
  }
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(M * K), y(M * N);
  for (float &v : x)
    v = normal(rng);
  fm::rt::ThreadPool *pool = poolOf(threads);
  int64_t next = 0;
  for (auto _ : state) {
    const uint8_t *wp = w[next]->data;
    next = next + 1 == copies ? 0 : next + 1;
    if (bits == 0)
      fm::kernels::matmulF32(x.data(), M, K,
                             reinterpret_cast<const float *>(wp), N, y.data(),
                             false, pool);
    else if (shiftMask)
      fm::kernels::qmatmulAvx512ShiftMaskOn(act, x.data(), M, K, wp, f, N,
                                            y.data(), false, pool);
    else
      fm::kernels::qmatmul(x.data(), M, K, wp, f, N, y.data(), false, pool,
                           act);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double iterations = static_cast<double>(state.iterations());
  // Rates: printed as "GB=.../s" and "GFLOP=.../s".
  state.counters["GB"] = benchmark::Counter(iterations * weightBytes / 1e9,
                                            benchmark::Counter::kIsRate);
  state.counters["GFLOP"] = benchmark::Counter(
      iterations * 2.0 * M * N * K / 1e9, benchmark::Counter::kIsRate);
  std::string label =
      bits ? "w" + std::to_string(bits) + "g" + std::to_string(f.group) +
                 " " +
                 (shiftMask ? "avx512-shiftmask"
                            : fm::kernels::qmatmulPathName()) +
                 "-" + fm::kernels::qActivationsName(act)
           : std::string("f32 ") + fm::kernels::matmulPathName();
  state.SetLabel(label + (cold ? " cold" : " hot"));
}

void matvecShapes(benchmark::internal::Benchmark *b) {
  b->ArgNames({"M", "N", "K", "bits", "group", "threads", "cold", "act",
               "planes"});
  const bool shiftMask = fm::kernels::qmatmulAvx512ShiftMaskAvailable();
  for (int threads : {1, 2}) {
    for (auto [N, K] : {std::pair<int64_t, int64_t>{2048, 2048},
                        {2048, 6656},
                        {6656, 2048}}) {
      for (int bits : {2, 4, 8})
        for (int group : {32, 64}) {
          b->Args({1, N, K, bits, group, threads, 1, 0, 0});
          if (shiftMask && bits < 8) // the GFNI kernel's baseline
            b->Args({1, N, K, bits, group, threads, 1, 0, 1});
        }
      // The one-digit int8 baseline beside the default.
      for (int bits : {2, 4})
        b->Args({1, N, K, bits, 32, threads, 1, 1, 0});
      b->Args({1, N, K, 0, 0, threads, 1, 0, 0}); // f32 weights
    }
    // Hot (cache-resident) 2048x2048 in every activation mode, and cold
    // f32 activations.
    for (int bits : {2, 4}) {
      for (int act : {0, 1, 2})
        b->Args({1, 2048, 2048, bits, 64, threads, 0, act, 0});
      if (shiftMask)
        b->Args({1, 2048, 2048, bits, 64, threads, 0, 0, 1});
      b->Args({1, 2048, 2048, bits, 64, threads, 1, 2, 0});
    }
  }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void prefillShapes(benchmark::internal::Benchmark *b) {
  b->ArgNames({"M", "N", "K", "bits", "group", "threads", "cold", "act",
               "planes"});
  for (int threads : {1, 2}) {
    for (int bits : {2, 4, 8})
      for (int act : {0, 1})
        b->Args({128, 2048, 2048, bits, 64, threads, 0, act, 0});
    b->Args({128, 6656, 2048, 2, 64, threads, 0, 0, 0});
    b->Args({128, 2048, 6656, 2, 64, threads, 0, 0, 0});
    b->Args({128, 2048, 2048, 0, 0, threads, 0, 0, 0}); // f32 weights
  }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// The matvec of 1 .. kMatvecMaxRows rows (isa.h: speculative verification,
// batched decode): each weight tile unpacked once for all M rows, cold, on
// the 2.9B llama shape's FFN up (3072 -> 8192); time per call against
// M = 1's is what an M-row verification pass costs over a decode step.
void matvecRowsShapes(benchmark::internal::Benchmark *b) {
  b->ArgNames({"M", "N", "K", "bits", "group", "threads", "cold", "act",
               "planes"});
  for (int threads : {1, 2})
    for (auto [bits, group] : {std::pair<int, int>{2, 64}, {4, 32}, {8, 32}})
      for (int M : {1, 2, 3, 5, 8})
        b->Args({M, 8192, 3072, bits, group, threads, 1, 0, 0});
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_QMatmul)->Name("BM_QMatvec")->Apply(matvecShapes);
BENCHMARK(BM_QMatmul)->Name("BM_QMatvecRows")->Apply(matvecRowsShapes);
BENCHMARK(BM_QMatmul)->Name("BM_QPrefill")->Apply(prefillShapes);

} // namespace
