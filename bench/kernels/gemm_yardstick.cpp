// fm-gemm-yardstick: fmc's prefill GEMM (qgemm over repacked low-bit
// weights) against an outside peak, oneDNN's s8s8s32 matmul (AMX brgemm
// where the CPU has it; int8 weights, one scale, weights pre-reordered as a
// compile-time repack would be), and against fmc's previous prefill path
// (qmatmul, M rows), on the projection shapes of afm7 (hidden 2048, FFN
// 6656, qkv 2560) and a 2.9B llama (hidden 3072, FFN 8192), M = 64 and 128
// tokens, 1 and 2 threads. Every variant of a shape runs in each of
// --rounds interleaved rounds; the table gives medians, the fraction of
// oneDNN, and a tokens/s equivalent for a full layer stack (the sum of one
// layer's GEMMs, times the layers; attention and norms excluded).
//
// oneDNN is a benchmark dependency only (libdnnl-dev); the runtime never
// links it.
#include "kernels/qgemm.h"
#include "kernels/qmatmul.h"
#include "kernels/quantize.h"
#include "base/ThreadPool.h"

#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

// oneDNN's threads are OpenMP's (Debian builds it with libgomp).
extern "C" void omp_set_num_threads(int);

namespace {

using fm::kernels::QActivations;
using fm::kernels::QuantFormat;
using fm::kernels::QuantGrid;

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Seconds per call: repeated for at least `minSeconds`.
double timeIt(const std::function<void()> &f, double minSeconds) {
  f(); // warm
  int reps = 0;
  const double t0 = now();
  double t;
  do {
    f();
    ++reps;
    t = now() - t0;
  } while (t < minSeconds);
  return t / reps;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2]
                      : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Shape {
  const char *model;
  const char *name;
  int64_t N, K;
  int count; // per layer
};

// Random quants with valid scales (the kernels' speed does not depend on
// the values): N packed rows of K inputs.
std::vector<uint8_t> randomPacked(QuantFormat f, int64_t N, int64_t K,
                                  std::mt19937 &rng) {
  const int64_t rowBytes = static_cast<int64_t>(fm::kernels::packedRowBytes(f, K));
  const int64_t qBytes = fm::kernels::quantBytes(f, K);
  std::vector<uint8_t> w(N * rowBytes);
  for (int64_t n = 0; n < N; ++n) {
    uint8_t *row = w.data() + n * rowBytes;
    for (int64_t i = 0; i < qBytes; ++i)
      row[i] = static_cast<uint8_t>(rng());
    for (int64_t i = qBytes; i < rowBytes; i += 2) {
      const uint16_t h = fm::kernels::floatToHalf(0.01f + 1e-4f * (rng() % 64));
      std::memcpy(row + i, &h, 2);
    }
  }
  return w;
}

struct OneDnn {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{eng};
};

struct Variant {
  std::string name;
  std::function<void()> run;
  std::vector<double> seconds;
};

} // namespace

int main(int argc, char **argv) {
  int rounds = 3;
  double minSeconds = 0.15;
  std::string only;
  std::vector<int64_t> rowCounts = {64, 128};
  for (int i = 1; i < argc; ++i) {
    if (!std::strncmp(argv[i], "--rounds=", 9))
      rounds = std::atoi(argv[i] + 9);
    else if (!std::strncmp(argv[i], "--min-time=", 11))
      minSeconds = std::atof(argv[i] + 11);
    else if (!std::strncmp(argv[i], "--model=", 8))
      only = argv[i] + 8;
    else if (!std::strncmp(argv[i], "--rows=", 7)) {
      rowCounts.clear();
      for (const char *s = argv[i] + 7;;) {
        char *end = nullptr;
        const long long m = std::strtoll(s, &end, 10);
        if (end == s || m <= 0 || (*end && *end != ',')) {
          std::fprintf(stderr, "fm-gemm-yardstick: bad --rows '%s'\n",
                       argv[i] + 7);
          return 2;
        }
        rowCounts.push_back(m);
        if (!*end)
          break;
        s = end + 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--rounds=N] [--min-time=S] [--model=afm7|llama] "
                   "[--rows=M,M,...]\n",
                   argv[0]);
      return 2;
    }
  }
  // Idle OpenMP workers must not spin on the cores fmc's pool is using;
  // libgomp reads this when it loads, so re-run with it set.
  const char *policy = getenv("OMP_WAIT_POLICY");
  if (!policy || std::strcmp(policy, "PASSIVE") != 0) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);
    std::perror("fm-gemm-yardstick: re-exec with OMP_WAIT_POLICY=PASSIVE");
    return 1;
  }

  const std::vector<Shape> shapes = {
      {"afm7", "qkv", 2560, 2048, 1},   {"afm7", "o", 2048, 2048, 1},
      {"afm7", "gate/up", 6656, 2048, 2}, {"afm7", "down", 2048, 6656, 1},
      {"llama", "q/k/v/o", 3072, 3072, 4}, {"llama", "gate/up", 8192, 3072, 2},
      {"llama", "down", 3072, 8192, 1}};
  const std::map<std::string, int> layers = {{"afm7", 56}, {"llama", 26}};
  const QuantFormat w2{2, 64, QuantGrid::Balanced}, w4{4, 32, QuantGrid::Balanced};
  const fm::kernels::GemmPath best = fm::kernels::gemmPathBest();
  // The VNNI kernel (beside AMX) and AVX2 (the kernel of CPUs without
  // AVX-512, measured on this one), each where it is not the best path.
  const bool vnniColumn =
      best != fm::kernels::GemmPath::Avx512Vnni &&
      fm::kernels::gemmPathAvailable(fm::kernels::GemmPath::Avx512Vnni);
  const bool avx2Column =
      best != fm::kernels::GemmPath::Avx2 &&
      fm::kernels::gemmPathAvailable(fm::kernels::GemmPath::Avx2);

  std::printf("fm-gemm-yardstick on %s: qgemm path %s, oneDNN %d.%d; %d rounds, "
              "medians\n",
              fm::kernels::cpuName().c_str(), fm::kernels::gemmPathName(best),
              dnnl_version()->major, dnnl_version()->minor, rounds);
  std::printf("GOPS = 2 M N K / time (useful ops, whatever the kernel "
              "computes); frac = of oneDNN s8s8s32 on the same shape\n\n");

  OneDnn dnn;
  std::mt19937 rng(1);
  // Per (model, M, threads, variant): the layer's summed seconds.
  std::map<std::string, double> layerSeconds;
  std::vector<std::string> variantOrder;

  for (int threads : {1, 2}) {
    fm::rt::ThreadPool pool(threads);
    omp_set_num_threads(threads);
    for (int64_t M : rowCounts) {
      std::printf("threads %d, M %lld\n", threads, static_cast<long long>(M));
      std::printf("  %-6s %-8s %5s %5s | %8s |", "model", "matrix", "N", "K",
                  "oneDNN");
      for (const char *name : {"w2 best int8x2", "w2 best int8", "w2 best int11",
                               "w4 best int8x2", "w4 best int8", "w4 best int11"})
        std::printf(" %-18s", name);
      if (vnniColumn)
        std::printf(" %-18s", "w2 vnni int8x2");
      if (avx2Column)
        std::printf(" %-18s", "w4 avx2 int8x2");
      std::printf(" %-18s %-18s\n", "w2 old int8x2", "w4 old int8x2");
      for (const Shape &sh : shapes) {
        if (!only.empty() && only != sh.model)
          continue;
        const int64_t N = sh.N, K = sh.K;
        std::vector<float> x(M * K), y(M * N);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (float &v : x)
          v = normal(rng);
        // oneDNN operands: s8 A [M][K], s8 B [K][N] reordered to its
        // preferred layout, s32 C.
        using tag = dnnl::memory::format_tag;
        using dt = dnnl::memory::data_type;
        dnnl::memory::desc aMd({M, K}, dt::s8, tag::ab);
        dnnl::memory::desc bMd({K, N}, dt::s8, tag::any);
        dnnl::memory::desc cMd({M, N}, dt::s32, tag::ab);
        auto pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(aMd, bMd, cMd),
                                               dnn.eng);
        dnnl::memory A(aMd, dnn.eng), B(pd.weights_desc(), dnn.eng),
            C(cMd, dnn.eng);
        {
          int8_t *a = static_cast<int8_t *>(A.get_data_handle());
          for (int64_t i = 0; i < M * K; ++i)
            a[i] = static_cast<int8_t>(rng() % 255 - 127);
          dnnl::memory Bplain({{K, N}, dt::s8, tag::ab}, dnn.eng);
          int8_t *b = static_cast<int8_t *>(Bplain.get_data_handle());
          for (int64_t i = 0; i < K * N; ++i)
            b[i] = static_cast<int8_t>(rng() % 255 - 127);
          dnnl::reorder(Bplain, B).execute(dnn.stream, Bplain, B);
          dnn.stream.wait();
        }
        dnnl::matmul mm(pd);
        const std::string impl = pd.impl_info_str();

        const std::vector<uint8_t> p2 = randomPacked(w2, N, K, rng);
        const std::vector<uint8_t> p4 = randomPacked(w4, N, K, rng);
        const std::vector<uint8_t> g2 =
            fm::kernels::repackForGemm(fm::kernels::GemmLayout::Panel16, w2, N, K, p2.data());
        const std::vector<uint8_t> g4 =
            fm::kernels::repackForGemm(fm::kernels::GemmLayout::Panel16, w4, N, K, p4.data());
        auto gemm = [&](fm::kernels::GemmPath path, const std::vector<uint8_t> &w,
                        QuantFormat f, QActivations act) {
          return [&, path, f, act, wp = w.data()] {
            fm::kernels::qgemmOn(path, x.data(), M, K, wp,
                                 fm::kernels::GemmLayout::Panel16, f, N,
                                 y.data(), false, &pool, act);
          };
        };
        std::vector<Variant> v;
        v.push_back({"oneDNN", [&] {
                       mm.execute(dnn.stream, {{DNNL_ARG_SRC, A},
                                               {DNNL_ARG_WEIGHTS, B},
                                               {DNNL_ARG_DST, C}});
                       dnn.stream.wait();
                     }, {}});
        v.push_back({"w2 best int8x2", gemm(best, g2, w2, QActivations::Int8x2), {}});
        v.push_back({"w2 best int8", gemm(best, g2, w2, QActivations::Int8), {}});
        v.push_back({"w2 best int11", gemm(best, g2, w2, QActivations::Int11), {}});
        v.push_back({"w4 best int8x2", gemm(best, g4, w4, QActivations::Int8x2), {}});
        v.push_back({"w4 best int8", gemm(best, g4, w4, QActivations::Int8), {}});
        v.push_back({"w4 best int11", gemm(best, g4, w4, QActivations::Int11), {}});
        if (vnniColumn)
          v.push_back({"w2 vnni int8x2",
                       gemm(fm::kernels::GemmPath::Avx512Vnni, g2, w2,
                            QActivations::Int8x2), {}});
        if (avx2Column)
          v.push_back({"w4 avx2 int8x2",
                       gemm(fm::kernels::GemmPath::Avx2, g4, w4,
                            QActivations::Int8x2), {}});
        v.push_back({"w2 old int8x2", [&] {
                       fm::kernels::qmatmul(x.data(), M, K, p2.data(), w2, N,
                                            y.data(), false, &pool);
                     }, {}});
        v.push_back({"w4 old int8x2", [&] {
                       fm::kernels::qmatmul(x.data(), M, K, p4.data(), w4, N,
                                            y.data(), false, &pool);
                     }, {}});
        for (int r = 0; r < rounds; ++r)
          for (Variant &var : v)
            var.seconds.push_back(timeIt(var.run, minSeconds));
        const double ops = 2.0 * M * N * K;
        const double peak = ops / median(v[0].seconds) / 1e9;
        std::printf("  %-6s %-8s %5lld %5lld | %8.0f |", sh.model, sh.name,
                    static_cast<long long>(N), static_cast<long long>(K), peak);
        for (size_t i = 1; i < v.size(); ++i) {
          const double gops = ops / median(v[i].seconds) / 1e9;
          std::printf(" %6.0f (%5.1f%%)   ", gops, 100.0 * gops / peak);
        }
        std::printf("  [%s]\n", impl.c_str());
        for (const Variant &var : v) {
          const std::string key = std::string(sh.model) + "|" +
                                  std::to_string(M) + "|" +
                                  std::to_string(threads) + "|" + var.name;
          layerSeconds[key] += sh.count * median(var.seconds);
          if (std::find(variantOrder.begin(), variantOrder.end(), var.name) ==
              variantOrder.end())
            variantOrder.push_back(var.name);
        }
      }
    }
  }

  std::printf("\nLayer stack, GEMMs only (tokens/s = M / (layers x one layer's "
              "summed GEMM medians)):\n");
  for (const auto &[model, count] : layers) {
    if (!only.empty() && only != model)
      continue;
    for (int threads : {1, 2})
      for (int64_t M : rowCounts) {
        std::printf("  %-5s %2d layers, %d thread%s, M %3lld:", model.c_str(),
                    count, threads, threads > 1 ? "s" : "",
                    static_cast<long long>(M));
        for (const std::string &name : variantOrder) {
          const std::string key = model + "|" + std::to_string(M) + "|" +
                                  std::to_string(threads) + "|" + name;
          auto it = layerSeconds.find(key);
          if (it == layerSeconds.end())
            continue;
          std::printf("  %s %.0f", name.c_str(), M / (count * it->second));
        }
        std::printf("\n");
      }
  }
  return 0;
}
