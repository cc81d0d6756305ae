// fm-qmatvec-planes: the decode matvec with GFNI planes (qmatmul's own
// path where the CPU has AVX512-VNNI and GFNI) against the same kernel with
// the planes split by shift and mask (qmatmulAvx512ShiftMaskOn), on weight
// copies cycled through more than the last-level cache (cold, as in a
// decode step). The two alternate in 21 pairs of runs, each run ~200 MiB of
// weights, the order flipped every pair; it prints each one's median GB/s
// and the median and quartiles of the per-pair ratio, which a shared
// machine's drift moves far less than it moves either median.
//
//   fm-qmatvec-planes [THREADS...]   (default 1 2)
#include "base/ThreadPool.h"
#include "kernels/qmatmul.h"
#include "kernels/quantize.h"
#include "packed_copies.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace {

using fm::kernels::QActivations;
using fm::kernels::QuantFormat;
using fm::kernels::QuantGrid;

struct Shape {
  int64_t N, K;
  int bits, group;
};

void pair(const Shape &s, int threads, QActivations act) {
  const QuantFormat f{s.bits, s.group, QuantGrid::Balanced};
  const int64_t rowBytes = static_cast<int64_t>(packedRowBytes(f, s.K));
  const int64_t bytes = s.N * rowBytes;
  std::mt19937 rng(1);
  const std::vector<fm::bench::Bytes> w =
      fm::bench::coldPackedCopies(f, s.N, s.K, rng);
  const int64_t copies = static_cast<int64_t>(w.size());
  std::vector<float> x(s.K), y(s.N);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float &v : x)
    v = normal(rng);
  fm::rt::ThreadPool pool(threads);
  const int iterations =
      static_cast<int>(std::max<int64_t>(4, (int64_t(200) << 20) / bytes));
  int64_t next = 0;
  auto run = [&](bool shiftMask) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      const uint8_t *wp = w[next].get();
      next = next + 1 == copies ? 0 : next + 1;
      if (shiftMask)
        fm::kernels::qmatmulAvx512ShiftMaskOn(act, x.data(), 1, s.K, wp, f, s.N,
                                              y.data(), false, &pool);
      else
        fm::kernels::qmatmul(x.data(), 1, s.K, wp, f, s.N, y.data(), false,
                             &pool, act);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    return double(iterations) * double(bytes) / secs / 1e9;
  };
  run(false); // warm-up: page faults, the pool's threads
  run(true);
  std::vector<double> gfni, shiftMask, ratio;
  for (int p = 0; p < 21; ++p) {
    double g, m;
    if (p & 1) {
      m = run(true);
      g = run(false);
    } else {
      g = run(false);
      m = run(true);
    }
    gfni.push_back(g);
    shiftMask.push_back(m);
    ratio.push_back(g / m);
  }
  std::sort(ratio.begin(), ratio.end());
  std::printf("| %lld x %lld | w%d g%d | %s | %d | %.1f | %.1f | %.3f "
              "[%.3f, %.3f] |\n",
              static_cast<long long>(s.N), static_cast<long long>(s.K), s.bits,
              s.group, fm::kernels::qActivationsName(act), threads,
              fm::bench::median(shiftMask), fm::bench::median(gfni), ratio[10],
              ratio[5], ratio[15]);
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  if (!fm::kernels::qmatmulAvx512ShiftMaskAvailable()) {
    std::printf("fm-qmatvec-planes: skipped: qmatmul path %s has no GFNI "
                "planes on this CPU\n",
                fm::kernels::qmatmulPathName());
    return 0;
  }
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i)
    threads.push_back(std::atoi(argv[i]));
  if (threads.empty())
    threads = {1, 2};
  std::printf("fm-qmatvec-planes: cold decode matvec GB/s of packed bytes, "
              "21 alternating pairs, medians\n\n");
  std::printf("| N x K | weights | x | threads | shift and mask | GFNI | "
              "ratio [quartiles] |\n| --- | --- | --- | --- | --- | --- | "
              "--- |\n");
  const Shape shapes[] = {{6656, 2048, 2, 64}, {2048, 6656, 2, 64},
                          {8192, 3072, 2, 64}, {6656, 2048, 4, 32},
                          {2048, 6656, 4, 32}, {8192, 3072, 4, 32}};
  for (int t : threads)
    for (const Shape &s : shapes)
      pair(s, t, QActivations::Int8x2);
  return 0;
}
