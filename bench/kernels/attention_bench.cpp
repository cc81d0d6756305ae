// Attention benchmarks: decode (one query row over a long cache, GB/s of
// K and V read) and prefill, f32 and int8 caches, 1 and 2 threads.
#include "kernels/attention.h"
#include "kernels/attention_flash.h"
#include "base/ThreadPool.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

fm::rt::ThreadPool *poolOf(int threads) {
  static std::unique_ptr<fm::rt::ThreadPool> pools[3];
  if (!pools[threads])
    pools[threads] = std::make_unique<fm::rt::ThreadPool>(threads);
  return pools[threads].get();
}

// Args: S, pos0, int8, threads, path (KernelIsa; -1 = dispatched), blocked
// (1: attentionBlocked, the flash-style prefill). 32 query heads over 8 KV
// heads of 128.
void BM_Attention(benchmark::State &state) {
  const int64_t S = state.range(0), pos0 = state.range(1);
  const bool int8 = state.range(2) != 0;
  const int threads = static_cast<int>(state.range(3));
  using fm::kernels::KernelIsa;
  KernelIsa isa = state.range(4) < 0 ? fm::kernels::kernelIsaBest()
                                     : static_cast<KernelIsa>(state.range(4));
  if (isa == KernelIsa::Neon)
    isa = KernelIsa::Generic;
  if (!fm::kernels::kernelIsaAvailable(isa)) {
    state.SkipWithError("path not available on this CPU");
    return;
  }
  const int64_t H = 32, KVH = 8, D = 128, capacity = pos0 + S;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> q(S * H * D), out(S * H * D);
  for (float &v : q)
    v = dist(rng);
  const int64_t cacheElems = capacity * KVH * D;
  std::vector<float> k32(int8 ? 0 : cacheElems), v32(int8 ? 0 : cacheElems);
  std::vector<int8_t> k8(int8 ? cacheElems : 0), v8(int8 ? cacheElems : 0);
  for (float &v : k32)
    v = dist(rng);
  for (float &v : v32)
    v = dist(rng);
  for (int8_t &v : k8)
    v = static_cast<int8_t>(rng() % 255 - 127);
  for (int8_t &v : v8)
    v = static_cast<int8_t>(rng() % 255 - 127);

  fm::kernels::AttentionArgs args;
  args.q = q.data();
  args.S = S;
  args.pos0 = pos0;
  args.H = H;
  args.KVH = KVH;
  args.D = D;
  args.scale = 0.088f;
  args.k = int8 ? static_cast<const void *>(k8.data()) : k32.data();
  args.v = int8 ? static_cast<const void *>(v8.data()) : v32.data();
  args.capacity = capacity;
  args.int8 = int8;
  args.kScale = 0.02f;
  args.vScale = 0.01f;
  args.out = out.data();
  fm::rt::ThreadPool *pool = poolOf(threads);
  const bool blocked = state.range(5) != 0;
  for (auto _ : state) {
    if (blocked)
      fm::kernels::attentionBlockedOn(isa, args, pool);
    else
      fm::kernels::attentionOn(isa, args, pool);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double cacheBytes = 2.0 * cacheElems * (int8 ? 1 : 4);
  state.counters["GB"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * cacheBytes / 1e9,
      benchmark::Counter::kIsRate);
  state.SetLabel(std::string(fm::kernels::kernelIsaName(isa)) +
                 (blocked ? " blocked" : ""));
}

BENCHMARK(BM_Attention)
    ->ArgNames({"S", "pos0", "int8", "threads", "path", "blocked"})
    ->ArgsProduct({{1}, {4096}, {0, 1}, {1, 2}, {-1}, {0}})
    ->ArgsProduct({{128}, {0}, {0, 1}, {1, 2}, {-1}, {0}})
    // Each path on one thread, to show what the ISA-specific builds buy.
    ->ArgsProduct({{1}, {4096}, {0, 1}, {1}, {0, 1, 2}, {0}})
    ->ArgsProduct({{128}, {0}, {0, 1}, {1}, {0, 1, 2}, {0}})
    // Long prompts: per-row against blocked, side by side.
    ->ArgsProduct({{512, 2048}, {0}, {0, 1}, {1, 2}, {-1}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

} // namespace
