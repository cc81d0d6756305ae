// fm-quantize-bench: quantizeRows (the compiler's per-tensor packing) against
// the previous implementation (kernels/quantize_reference.h) in the same run,
// over the projection tensors of one layer of a 2.9B llama (hidden 3072,
// FFN 8192, 26 layers; --layers=N for more), both on the same tensors in
// each of --rounds interleaved rounds; medians, and the full model's
// quantization time extrapolated from them. Also the relative RMS error of
// both on real-shaped random tensors (normal, per-row scales, outliers) and
// on QAT-grid tensors (which must come back exactly), and whether both
// packed the same bytes.
#include "kernels/matmul.h" // halfToFloat
#include "kernels/quantize.h"
#include "kernels/quantize_reference.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using fm::kernels::QuantError;
using fm::kernels::QuantFormat;
using fm::kernels::QuantGrid;

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2]
                      : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Tensor {
  std::string name;
  int64_t N, K;
};

// Normal weights with per-row scales (0.5x - 2x) and rare 8x outliers, like
// a trained checkpoint's projections.
std::vector<float> realShaped(int64_t N, int64_t K, std::mt19937 &rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> rowScale(0.5f, 2.0f);
  std::vector<float> w(N * K);
  for (int64_t n = 0; n < N; ++n) {
    const float s = 0.02f * rowScale(rng);
    for (int64_t k = 0; k < K; ++k) {
      float v = s * normal(rng);
      if (rng() % 4096 == 0)
        v *= 8.0f;
      w[n * K + k] = v;
    }
  }
  return w;
}

// Each group on the balanced grid with an f16 scale (QAT).
std::vector<float> qatGrid(QuantFormat f, int64_t N, int64_t K,
                           std::mt19937 &rng) {
  std::vector<float> w(N * K);
  const int levels = 1 << f.bits;
  for (int64_t g = 0; g < N * K / f.group; ++g) {
    const uint16_t sh =
        static_cast<uint16_t>(((9 + rng() % 4) << 10) | (rng() % 1024));
    const float s = fm::kernels::halfToFloat(sh);
    for (int k = 0; k < f.group; ++k) {
      int q = static_cast<int>(rng() % levels);
      if (k == 0)
        q = levels - 1; // the outer level, so 8 bits round-trips too
      w[g * f.group + k] = (q - (levels - 1) * 0.5f) * s;
    }
  }
  return w;
}

} // namespace

int main(int argc, char **argv) {
  int rounds = 3, layers = 1, bits = 2, group = 64;
  for (int i = 1; i < argc; ++i) {
    if (!std::strncmp(argv[i], "--rounds=", 9))
      rounds = std::atoi(argv[i] + 9);
    else if (!std::strncmp(argv[i], "--layers=", 9))
      layers = std::atoi(argv[i] + 9);
    else if (!std::strncmp(argv[i], "--bits=", 7))
      bits = std::atoi(argv[i] + 7);
    else if (!std::strncmp(argv[i], "--group=", 8))
      group = std::atoi(argv[i] + 8);
    else {
      std::fprintf(stderr,
                   "usage: %s [--rounds=N] [--layers=N] [--bits=2|4|8] "
                   "[--group=32|64|128]\n",
                   argv[0]);
      return 2;
    }
  }
  const QuantFormat f{bits, group, QuantGrid::Balanced};
  if (!fm::kernels::isValidQuantFormat(f)) {
    std::fprintf(stderr, "fm-quantize-bench: no format with %d bits, group %d\n",
                 bits, group);
    return 2;
  }
  const int modelLayers = 26;
  std::vector<Tensor> tensors;
  for (int l = 0; l < layers; ++l)
    for (const char *n : {"q", "k", "v", "o"})
      tensors.push_back({std::string("layers.") + std::to_string(l) + "." + n,
                         3072, 3072});
  for (int l = 0; l < layers; ++l) {
    tensors.push_back({"layers." + std::to_string(l) + ".gate", 8192, 3072});
    tensors.push_back({"layers." + std::to_string(l) + ".up", 8192, 3072});
    tensors.push_back({"layers." + std::to_string(l) + ".down", 3072, 8192});
  }
  int64_t weights = 0;
  for (const Tensor &t : tensors)
    weights += t.N * t.K;
  std::printf("fm-quantize-bench: w%d g%d balanced, %d layer%s of a 2.9B llama "
              "(%.1fM weights), %d rounds, medians\n",
              bits, group, layers, layers > 1 ? "s" : "", weights / 1e6, rounds);

  std::mt19937 rng(1);
  std::vector<std::vector<float>> data;
  for (const Tensor &t : tensors)
    data.push_back(realShaped(t.N, t.K, rng));
  std::vector<double> tRef, tNew;
  QuantError eRef, eNew;
  bool same = true;
  std::vector<uint8_t> a, b;
  for (int r = 0; r < rounds; ++r) {
    double sRef = 0, sNew = 0;
    eRef = eNew = QuantError();
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor &t = tensors[i];
      const size_t bytes = t.N * fm::kernels::packedRowBytes(f, t.K);
      a.assign(bytes, 0);
      b.assign(bytes, 0);
      double t0 = now();
      const QuantError er = fm::kernels::reference::quantizeRowsReference(
          data[i].data(), t.N, t.K, f, a.data());
      double t1 = now();
      const QuantError en =
          fm::kernels::quantizeRows(data[i].data(), t.N, t.K, f, b.data());
      double t2 = now();
      sRef += t1 - t0;
      sNew += t2 - t1;
      eRef.sqError += er.sqError;
      eRef.sqSum += er.sqSum;
      eNew.sqError += en.sqError;
      eNew.sqSum += en.sqSum;
      same = same && a == b;
    }
    tRef.push_back(sRef);
    tNew.push_back(sNew);
    std::printf("  round %d: reference %.2f s, quantizeRows %.2f s\n", r + 1,
                sRef, sNew);
  }
  const double mr = median(tRef), mn = median(tNew);
  std::printf("\n  %-34s %10s %10s\n", "", "reference", "new");
  std::printf("  %-34s %9.2fs %9.2fs  (%.2fx)\n", "these tensors (median)", mr, mn,
              mr / mn);
  std::printf("  %-34s %9.1f %10.1f\n", "M weights/s", weights / mr / 1e6,
              weights / mn / 1e6);
  std::printf("  %-34s %9.1fs %9.1fs\n", "26 layers (extrapolated)",
              mr * modelLayers / layers, mn * modelLayers / layers);
  std::printf("  %-34s %10.6f %10.6f\n", "rel. RMS error, real-shaped",
              eRef.relativeRms(), eNew.relativeRms());

  // QAT-grid tensors: must come back exactly.
  QuantError qRef, qNew;
  bool qSame = true;
  for (const Tensor &t : {Tensor{"qat q", 3072, 3072}, Tensor{"qat down", 3072, 8192}}) {
    const std::vector<float> w = qatGrid(f, t.N, t.K, rng);
    const size_t bytes = t.N * fm::kernels::packedRowBytes(f, t.K);
    a.assign(bytes, 0);
    b.assign(bytes, 0);
    const QuantError er =
        fm::kernels::reference::quantizeRowsReference(w.data(), t.N, t.K, f, a.data());
    const QuantError en = fm::kernels::quantizeRows(w.data(), t.N, t.K, f, b.data());
    qRef.sqError += er.sqError;
    qRef.sqSum += er.sqSum;
    qNew.sqError += en.sqError;
    qNew.sqSum += en.sqSum;
    qSame = qSame && a == b;
  }
  std::printf("  %-34s %10.6f %10.6f\n", "rel. RMS error, QAT grid",
              qRef.relativeRms(), qNew.relativeRms());
  std::printf("  %-34s %21s\n", "same packed bytes",
              same && qSame ? "yes" : "NO");
  return same && qSame ? 0 : 1;
}
