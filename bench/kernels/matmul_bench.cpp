// Matmul benchmarks: the decode matvec (GB/s of weights streamed) and a
// prefill matmul (GFLOP/s), on 1 and 2 threads, f32 and f16 weights.
//
// Weights are cycled through enough copies to exceed the last-level cache,
// as in a real decode step where each layer's weights come from DRAM. All
// buffers are 64-byte aligned like the runtime's mmapped weights (a plain
// std::vector of this size starts 16 bytes into a page, and splits every
// 64-byte load across two cache lines).
#include "kernels/matmul.h"
#include "base/ThreadPool.h"
#include "cold_bytes.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace {

using fm::kernels::MatmulPath;

// Copies of w together at least this large (cold_bytes.h).
const int64_t kColdBytes = fm::bench::coldBytes();

fm::rt::ThreadPool *poolOf(int threads) {
  static std::unique_ptr<fm::rt::ThreadPool> pools[3];
  if (!pools[threads])
    pools[threads] = std::make_unique<fm::rt::ThreadPool>(threads);
  return pools[threads].get();
}

// A 64-byte aligned array of n T, zero-initialized.
template <typename T> struct AlignedArray {
  explicit AlignedArray(int64_t n)
      : data(static_cast<T *>(std::aligned_alloc(
            64, ((n * sizeof(T) + 63) / 64) * 64))) {
    std::memset(data, 0, n * sizeof(T));
  }
  ~AlignedArray() { std::free(data); }
  AlignedArray(const AlignedArray &) = delete;
  AlignedArray &operator=(const AlignedArray &) = delete;
  T *data;
};

template <typename W> W weightValue(float v);
template <> float weightValue<float>(float v) { return v; }
template <> uint16_t weightValue<uint16_t>(float v) {
  // A normal half in [2^-5, 2^-4) with a random mantissa and sign.
  uint32_t m = static_cast<uint32_t>((v + 1.0f) * 511.0f) & 0x3ffu;
  return static_cast<uint16_t>((v < 0 ? 0x8000u : 0u) | (10u << 10) | m);
}

// Args: M, N (out), K (in), threads, path (-1 = dispatched).
template <typename W> void BM_Matmul(benchmark::State &state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  const MatmulPath path = state.range(4) < 0
                              ? fm::kernels::kernelIsaBest()
                              : static_cast<MatmulPath>(state.range(4));
  if (!fm::kernels::kernelIsaAvailable(path)) {
    state.SkipWithError("path not available on this CPU");
    return;
  }
  const int64_t weightBytes = N * K * static_cast<int64_t>(sizeof(W));
  const int64_t copies =
      M == 1 ? (kColdBytes + weightBytes - 1) / weightBytes : 1;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::unique_ptr<AlignedArray<W>>> w;
  for (int64_t c = 0; c < copies; ++c) {
    w.push_back(std::make_unique<AlignedArray<W>>(N * K));
    if (c > 0) // the values do not matter, only that each copy is apart
      std::memcpy(w.back()->data, w[0]->data, sizeof(W) * N * K);
    else
      for (int64_t i = 0; i < N * K; ++i)
        w.back()->data[i] = weightValue<W>(dist(rng));
  }
  AlignedArray<float> x(M * K), y(M * N);
  for (int64_t i = 0; i < M * K; ++i)
    x.data[i] = dist(rng);
  fm::rt::ThreadPool *pool = poolOf(threads);
  int64_t next = 0;
  for (auto _ : state) {
    const W *wp = w[next]->data;
    next = next + 1 == copies ? 0 : next + 1;
    if constexpr (sizeof(W) == 4)
      fm::kernels::matmulF32On(path, x.data, M, K, wp, N, y.data, false,
                               pool);
    else
      fm::kernels::matmulF16WOn(path, x.data, M, K, wp, N, y.data, false,
                                pool);
    benchmark::DoNotOptimize(y.data);
    benchmark::ClobberMemory();
  }
  const double iterations = static_cast<double>(state.iterations());
  // Rates: printed as "GB=.../s" and "GFLOP=.../s".
  state.counters["GB"] = benchmark::Counter(iterations * weightBytes / 1e9,
                                            benchmark::Counter::kIsRate);
  state.counters["GFLOP"] = benchmark::Counter(
      iterations * 2.0 * M * N * K / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(fm::kernels::kernelIsaName(path));
}

void shapes(benchmark::internal::Benchmark *b) {
  b->ArgNames({"M", "N", "K", "threads", "path"});
  for (int threads : {1, 2}) {
    for (auto [N, K] :
         {std::pair<int64_t, int64_t>{2048, 2048}, {2048, 6656}, {6656, 2048}})
      b->Args({1, N, K, threads, -1});
    b->Args({128, 2048, 2048, threads, -1});
  }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK_TEMPLATE(BM_Matmul, float)->Apply(shapes);
BENCHMARK_TEMPLATE(BM_Matmul, uint16_t)->Apply(shapes);

} // namespace

BENCHMARK_MAIN();
