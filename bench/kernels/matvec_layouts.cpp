// fm-matvec-layouts: decode's matvec from the two CPU weight layouts of a
// packed weight, qmatmul's rows (what decode runs) against qgemm's lone-row
// pass over the Panel16 copy (what an artifact with only GEMM copies would
// decode with), int8x2 activations. Cold: copies cycled through more than
// the last-level cache, at each thread count given; hot: 512 rows that stay
// in L2, one thread. Each measurement alternates the two in 21 pairs, the
// order flipped every pair, and prints each one's median GB/s and the
// median and quartiles of the per-pair ratio Panel16 / rows (the ratio is
// what a shared machine's drift moves least).
//
//   fm-matvec-layouts [THREADS...]   (default 1 2)
#include "base/ThreadPool.h"
#include "kernels/qgemm.h"
#include "kernels/qmatmul.h"
#include "packed_copies.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

namespace {

using fm::kernels::GemmLayout;
using fm::kernels::QActivations;
using fm::kernels::QuantFormat;
using fm::kernels::QuantGrid;

constexpr int kPairs = 21;
constexpr int64_t kHotRows = 512;

struct Shape {
  int64_t N, K;
  int bits, group;
};

// GB/s of `bytes` per call of f, over calls worth ~200 MiB.
double rate(const std::function<void()> &f, int64_t bytes) {
  const int calls =
      static_cast<int>(std::max<int64_t>(4, (int64_t(200) << 20) / bytes));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    f();
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return double(calls) * double(bytes) / s / 1e9;
}

// kPairs alternating pairs of rows() and panels(); one table line.
void pairs(const char *what, const Shape &s, int threads,
           const std::function<double()> &rows,
           const std::function<double()> &panels) {
  rows();
  panels(); // warm-up: page faults, the pool's threads
  std::vector<double> r, p, ratio;
  for (int i = 0; i < kPairs; ++i) {
    double a, b;
    if (i & 1) {
      b = panels();
      a = rows();
    } else {
      a = rows();
      b = panels();
    }
    r.push_back(a);
    p.push_back(b);
    ratio.push_back(b / a);
  }
  std::sort(ratio.begin(), ratio.end());
  std::printf("| %lld x %lld | w%d g%d | %s | %d | %.1f | %.1f | %.3f "
              "[%.3f, %.3f] |\n",
              static_cast<long long>(s.N), static_cast<long long>(s.K), s.bits,
              s.group, what, threads, fm::bench::median(r),
              fm::bench::median(p), ratio[kPairs / 2], ratio[kPairs / 4],
              ratio[3 * kPairs / 4]);
  std::fflush(stdout);
}

void shape(const Shape &s, const std::vector<int> &threads) {
  const QuantFormat f{s.bits, s.group, QuantGrid::Balanced};
  const QActivations act = QActivations::Int8x2;
  const int64_t rowBytes = static_cast<int64_t>(packedRowBytes(f, s.K));
  const int64_t bytes = s.N * rowBytes;
  std::mt19937 rng(1);
  const std::vector<fm::bench::Bytes> w =
      fm::bench::coldPackedCopies(f, s.N, s.K, rng);
  const size_t panelBytes =
      fm::kernels::gemmPackedBytes(GemmLayout::Panel16, f, s.N, s.K);
  std::vector<fm::bench::Bytes> panel;
  for (const fm::bench::Bytes &c : w) {
    panel.push_back(fm::bench::alignedBytes(static_cast<int64_t>(panelBytes)));
    fm::kernels::repackForGemmPanels(GemmLayout::Panel16, f, s.N, s.K, c.get(),
                                     panel.back().get(), 0, (s.N + 15) / 16);
  }
  std::vector<float> x(s.K), y(s.N);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float &v : x)
    v = normal(rng);
  const size_t copies = w.size();
  for (int t : threads) {
    fm::rt::ThreadPool pool(t);
    size_t next = 0;
    auto cold = [&](bool panels) {
      return rate(
          [&] {
            if (panels)
              fm::kernels::qgemm(x.data(), 1, s.K, panel[next].get(),
                                 GemmLayout::Panel16, f, s.N, y.data(), false,
                                 &pool, act);
            else
              fm::kernels::qmatmul(x.data(), 1, s.K, w[next].get(), f, s.N,
                                   y.data(), false, &pool, act);
            next = next + 1 == copies ? 0 : next + 1;
          },
          bytes);
    };
    pairs(
        "cold", s, t, [&] { return cold(false); }, [&] { return cold(true); });
  }
  // The first kHotRows rows of each layout: Panel16's first 32 panels are
  // a prefix of its bytes too.
  auto hot = [&](bool panels) {
    return rate(
        [&] {
          if (panels)
            fm::kernels::qgemm(x.data(), 1, s.K, panel[0].get(),
                               GemmLayout::Panel16, f, kHotRows, y.data(),
                               false, nullptr, act);
          else
            fm::kernels::qmatmul(x.data(), 1, s.K, w[0].get(), f, kHotRows,
                                 y.data(), false, nullptr, act);
        },
        kHotRows * rowBytes);
  };
  pairs(
      "hot", s, 1, [&] { return hot(false); }, [&] { return hot(true); });
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i)
    threads.push_back(std::atoi(argv[i]));
  if (threads.empty())
    threads = {1, 2};
  std::printf("fm-matvec-layouts: decode matvec GB/s of packed bytes, int8x2 "
              "x, rows (qmatmul) against Panel16 (qgemm, one row); qgemm path "
              "%s%s; %d alternating pairs, medians\n\n",
              fm::kernels::gemmPathName(fm::kernels::gemmPathBest()),
              fm::kernels::qgemmMatvecUsesGfni() ? ", GFNI tile rows" : "",
              kPairs);
  std::printf("| N x K | weights | weights in | threads | rows | Panel16 | "
              "Panel16 / rows [quartiles] |\n| --- | --- | --- | --- | --- | "
              "--- | --- |\n");
  for (const Shape &s : {Shape{8192, 3072, 2, 64}, Shape{8192, 3072, 4, 32},
                         Shape{8192, 3072, 8, 32}})
    shape(s, threads);
  return 0;
}
