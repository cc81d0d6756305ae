// fm-vision-bench: the kernel sequence of a ViTDet-L-shaped image encoder
// (docs/vit.md) on random weights, as the CPU device will run it: patch
// embedding, then per layer LayerNorm, qkv GEMM, window or global attention
// with rel-pos and registers, proj GEMM (+ residual), LayerNorm, fc1 GEMM,
// GELU, fc2 GEMM (+ residual); the final LayerNorm.
//
// Prints, per thread count: the image-encode latency, where the time goes,
// and the GFLOP/s of the encoder's matmuls against two peers measured in
// the same run on the same shapes: an OpenBLAS sgemm (the goal is >= 70% of
// it) and a register-only FMA loop (the machine's roof). Asserts nothing.
//
//   fm-vision-bench [--size 448|672] [--threads 1,2] [--images 3]
//                   [--layers 24] [--registers 4] [--reps 3]
#include "fma_peak.h"
#include "openblas.h"

#include "kernels/conv.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "kernels/pointwise.h"
#include "kernels/vit_attention.h"
#include "base/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using fm::kernels::KernelIsa;

double seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Options {
  int64_t size = 448, layers = 24, registers = 4;
  int images = 3, reps = 3;
  std::vector<int> threads = {1, 2};
};

// ViTDet-L: width 1024, 16 heads of 64, MLP 4096, patch 14, window 14,
// global layers 5, 11, 17, 23 (of 24; for fewer layers, every sixth).
constexpr int64_t kC = 1024, kHeads = 16, kHidden = 4096, kPatch = 14,
                  kWindow = 14;
// Distinct weight sets, cycled over the layers: 200 MB, more than the
// last-level cache of most machines, as a real model's 1.2 GB would be.
constexpr int kWeightSets = 4;

struct Layer {
  std::vector<float> norm1w, norm1b, qkvW, qkvB, projW, projB, relH, relW,
      norm2w, norm2b, fc1W, fc1B, fc2W, fc2B;
};

std::vector<float> randomVector(std::mt19937 &rng, int64_t n, float scale,
                                float offset = 0.0f) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = offset + scale * dist(rng);
  return v;
}

Layer randomLayer(std::mt19937 &rng, int64_t relRows) {
  const float wc = 1.0f / std::sqrt(float(kC)), wh = 1.0f / std::sqrt(float(kHidden));
  const int64_t D = kC / kHeads;
  Layer l;
  l.norm1w = randomVector(rng, kC, 0.1f, 1.0f);
  l.norm1b = randomVector(rng, kC, 0.1f);
  l.qkvW = randomVector(rng, 3 * kC * kC, wc);
  l.qkvB = randomVector(rng, 3 * kC, 0.1f);
  l.projW = randomVector(rng, kC * kC, wc);
  l.projB = randomVector(rng, kC, 0.1f);
  l.relH = randomVector(rng, relRows * D, 0.5f / std::sqrt(float(D)));
  l.relW = randomVector(rng, relRows * D, 0.5f / std::sqrt(float(D)));
  l.norm2w = randomVector(rng, kC, 0.1f, 1.0f);
  l.norm2b = randomVector(rng, kC, 0.1f);
  l.fc1W = randomVector(rng, kHidden * kC, wc);
  l.fc1B = randomVector(rng, kHidden, 0.1f);
  l.fc2W = randomVector(rng, kC * kHidden, wh);
  l.fc2B = randomVector(rng, kC, 0.1f);
  return l;
}

/// Where one image's encode spent its time.
struct Split {
  double total = 0, gemm = 0, attention = 0, windowAttention = 0, other = 0;
  double gemmFlops = 0, attentionFlops = 0, windowAttentionFlops = 0;
  /// With a shadow peer: its time on the same GEMM calls, each run right
  /// after ours on the same operands.
  double peerGemm = 0;
};

struct Encoder {
  const Options &opt;
  int64_t g, T; // grid side, tokens (registers + patches)
  std::vector<float> image, patchW, patchB, pos, registers;
  // Per weight set: window-layer (2·14 − 1 rel rows) and global-layer
  // (2g − 1) variants share all but the tables.
  std::vector<Layer> windowLayers, globalLayers;
  std::vector<float> x, n, qkv, attn, hidden, shadow;

  explicit Encoder(const Options &o) : opt(o) {
    g = o.size / kPatch;
    T = o.registers + g * g;
    std::mt19937 rng(1234);
    image = randomVector(rng, 3 * o.size * o.size, 1.0f);
    patchW = randomVector(rng, kC * 3 * kPatch * kPatch, 1.0f / std::sqrt(3.0f * kPatch * kPatch));
    patchB = randomVector(rng, kC, 0.1f);
    pos = randomVector(rng, g * g * kC, 0.5f);
    registers = randomVector(rng, o.registers * kC, 1.0f);
    for (int s = 0; s < kWeightSets; ++s) {
      windowLayers.push_back(randomLayer(rng, 2 * kWindow - 1));
      Layer gl = windowLayers.back();
      gl.relH = randomVector(rng, (2 * g - 1) * (kC / kHeads), 0.5f / 8.0f);
      gl.relW = randomVector(rng, (2 * g - 1) * (kC / kHeads), 0.5f / 8.0f);
      globalLayers.push_back(std::move(gl));
    }
    x.resize(T * kC);
    n.resize(T * kC);
    qkv.resize(T * 3 * kC);
    attn.resize(T * kC);
    hidden.resize(T * kHidden);
    shadow.resize(T * kHidden);
  }

  bool isGlobal(int64_t layer) const {
    if (opt.layers == 24)
      return layer == 5 || layer == 11 || layer == 17 || layer == 23;
    return layer % 6 == 5;
  }

  fm::kernels::VitAttentionArgs attentionArgs(const Layer &l, bool global) {
    fm::kernels::VitAttentionArgs a;
    a.qkv = qkv.data();
    a.registers = opt.registers;
    a.gridH = a.gridW = g;
    a.H = kHeads;
    a.D = kC / kHeads;
    a.scale = 1.0f / std::sqrt(float(a.D));
    a.window = global ? 0 : kWindow;
    a.relPosH = l.relH.data();
    a.relPosW = l.relW.data();
    a.padQkv = l.qkvB.data(); // a padded token is 0 after LN1: qkv = bias
    a.out = attn.data();
    return a;
  }

  /// One image. With `peer`, every GEMM call is followed by the peer's
  /// sgemm of the same operands (into scratch), timed separately.
  Split encode(fm::rt::ThreadPool &pool, const fm::bench::OpenBlas *peer = nullptr) {
    Split s;
    auto timed = [&](double &bucket, const std::function<void()> &f) {
      auto t0 = Clock::now();
      f();
      bucket += seconds(t0);
    };
    auto gemm = [&](const float *in, int64_t K, const std::vector<float> &w,
                    int64_t N, const std::vector<float> &b, float *out,
                    bool residual) {
      timed(s.gemm, [&] {
        fm::kernels::gemmF32(in, T, K, w.data(), N, b.data(), out, residual, &pool);
      });
      s.gemmFlops += 2.0 * T * K * N;
      if (peer)
        timed(s.peerGemm, [&] { peer->gemm(in, T, K, w.data(), N, shadow.data()); });
    };
    const auto start = Clock::now();
    timed(s.other, [&] {
      std::memcpy(x.data(), registers.data(), registers.size() * sizeof(float));
      fm::kernels::patchEmbed(image.data(), 3, opt.size, opt.size, kPatch,
                              patchW.data(), kC, patchB.data(), pos.data(),
                              x.data() + opt.registers * kC, &pool);
    });
    s.gemmFlops += 2.0 * g * g * kC * 3 * kPatch * kPatch;
    for (int64_t i = 0; i < opt.layers; ++i) {
      const bool global = isGlobal(i);
      const Layer &l = (global ? globalLayers : windowLayers)[i % kWeightSets];
      timed(s.other, [&] {
        fm::kernels::layerNorm(x.data(), T, kC, l.norm1w.data(), l.norm1b.data(),
                               1e-6f, n.data(), &pool);
      });
      gemm(n.data(), kC, l.qkvW, 3 * kC, l.qkvB, qkv.data(), false);
      const auto args = attentionArgs(l, global);
      const double before = s.attention;
      timed(s.attention, [&] { fm::kernels::vitAttention(args, &pool); });
      const double flops = 2.0 * double(fm::kernels::vitAttentionFlops(args));
      s.attentionFlops += flops;
      if (!global) {
        s.windowAttention += s.attention - before;
        s.windowAttentionFlops += flops;
      }
      gemm(attn.data(), kC, l.projW, kC, l.projB, x.data(), true);
      timed(s.other, [&] {
        fm::kernels::layerNorm(x.data(), T, kC, l.norm2w.data(), l.norm2b.data(),
                               1e-6f, n.data(), &pool);
      });
      gemm(n.data(), kC, l.fc1W, kHidden, l.fc1B, hidden.data(), false);
      timed(s.other, [&] {
        fm::kernels::activate(fm::kernels::Activation::Gelu, hidden.data(),
                              T * kHidden, &pool);
      });
      gemm(hidden.data(), kHidden, l.fc2W, kC, l.fc2B, x.data(), true);
    }
    timed(s.other, [&] {
      const Layer &l = windowLayers[0];
      fm::kernels::layerNorm(x.data() + opt.registers * kC, g * g, kC,
                             l.norm2w.data(), l.norm2b.data(), 1e-6f, n.data(), &pool);
    });
    s.total = seconds(start);
    return s;
  }
};

/// Best time of `reps` runs of f, after one warm-up, interleaving the
/// candidates so that a noisy phase of the machine hits them alike.
std::vector<double> bestOf(int reps, const std::vector<std::function<void()>> &fs) {
  std::vector<double> best(fs.size(), 1e30);
  for (const auto &f : fs)
    f();
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < fs.size(); ++i) {
      auto t0 = Clock::now();
      fs[i]();
      best[i] = std::min(best[i], seconds(t0));
    }
  return best;
}

std::vector<int> parseList(const char *s) {
  std::vector<int> out;
  for (const char *p = s; *p;) {
    out.push_back(std::atoi(p));
    while (*p && *p != ',')
      ++p;
    if (*p == ',')
      ++p;
  }
  return out;
}

bool parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; i += 2) {
    std::string a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) {
      std::fprintf(stderr, "fm-vision-bench: %s needs a value\n", a.c_str());
      return false;
    }
    if (a == "--size")
      o.size = std::atol(v);
    else if (a == "--threads")
      o.threads = parseList(v);
    else if (a == "--images")
      o.images = std::atoi(v);
    else if (a == "--layers")
      o.layers = std::atol(v);
    else if (a == "--registers")
      o.registers = std::atol(v);
    else if (a == "--reps")
      o.reps = std::atoi(v);
    else {
      std::fprintf(stderr, "fm-vision-bench: unknown option %s\n", a.c_str());
      return false;
    }
  }
  if (o.size % kPatch || o.size < kPatch || o.layers < 1 || o.images < 1 ||
      o.reps < 1 || o.registers < 0 || o.threads.empty()) {
    std::fprintf(stderr, "fm-vision-bench: bad options (size must be a multiple of 14)\n");
    return false;
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  Options opt;
  if (!parse(argc, argv, opt))
    return 2;
  const KernelIsa isa = fm::kernels::kernelIsaBest();
  fm::bench::OpenBlas blas(isa == KernelIsa::Avx512 ? "SkylakeX"
                           : isa == KernelIsa::Avx2 ? "Haswell"
                                                    : "");
  Encoder enc(opt);
  std::printf("fm-vision-bench: ViTDet-L-shaped encoder, %lld^2 px / patch 14 = "
              "%lld x %lld grid + %lld registers = %lld tokens; width 1024, "
              "%lld layers (window 14, global every 6th), 16 heads, MLP 4096, rel-pos\n",
              (long long)opt.size, (long long)enc.g, (long long)enc.g,
              (long long)opt.registers, (long long)enc.T, (long long)opt.layers);
  std::printf("kernels: %s; peer: %s\n", fm::kernels::kernelIsaName(isa),
              blas.describe().c_str());

  // The encoder's matmul shapes: M x K -> N, and how often an image runs
  // each.
  struct Shape {
    const char *name;
    int64_t M, K, N, count;
  };
  const int64_t T = enc.T, L = opt.layers;
  const Shape shapes[] = {
      {"qkv", T, kC, 3 * kC, L},        {"proj", T, kC, kC, L},
      {"fc1", T, kC, kHidden, L},       {"fc2", T, kHidden, kC, L},
      {"patch", enc.g * enc.g, 3 * kPatch * kPatch, kC, 1},
  };

  for (int threads : opt.threads) {
    fm::rt::ThreadPool pool(threads);
    blas.setThreads(threads);
    std::printf("\n== %d thread%s\n", threads, threads == 1 ? "" : "s");
    const double peak = fm::bench::fmaPeakGflops(pool);
    std::printf("  FMA peak (register-only loop): %.1f GFLOP/s\n", peak);

    std::printf("  %-6s %18s %12s %12s %12s %9s\n", "matmul", "M x K -> N",
                "gemmF32", "OpenBLAS", "matmulF32", "gemm/BLAS");
    double flopsAll = 0, oursAll = 0, blasAll = 0;
    for (const Shape &sh : shapes) {
      const Layer &l = enc.windowLayers[0];
      const std::vector<float> &w = sh.N == 3 * kC ? l.qkvW
                                    : sh.N == kHidden ? l.fc1W
                                    : sh.K == kHidden ? l.fc2W
                                    : sh.K == kC      ? l.projW
                                                      : enc.patchW;
      std::vector<float> in(sh.M * sh.K, 0.5f), out(sh.M * sh.N);
      std::vector<std::function<void()>> fs = {
          [&] { fm::kernels::gemmF32(in.data(), sh.M, sh.K, w.data(), sh.N,
                                     nullptr, out.data(), false, &pool); },
          [&] { fm::kernels::matmulF32(in.data(), sh.M, sh.K, w.data(), sh.N,
                                       out.data(), false, &pool); }};
      if (blas.ok())
        fs.push_back([&] { blas.gemm(in.data(), sh.M, sh.K, w.data(), sh.N, out.data()); });
      const std::vector<double> t = bestOf(opt.reps, fs);
      const double flops = 2.0 * sh.M * sh.K * sh.N;
      const double tb = blas.ok() ? t[2] : NAN;
      std::printf("  %-6s %6lld x %4lld -> %4lld %7.1f GF/s %7.1f GF/s %7.1f GF/s %9.2f\n",
                  sh.name, (long long)sh.M, (long long)sh.K, (long long)sh.N,
                  flops / t[0] * 1e-9, flops / tb * 1e-9, flops / t[1] * 1e-9, tb / t[0]);
      flopsAll += flops * sh.count;
      oursAll += t[0] * sh.count;
      blasAll += tb * sh.count;
    }
    std::printf("  weighted by an image's matmuls: gemmF32 %.1f GFLOP/s = %.2f of "
                "OpenBLAS (%.1f), %.2f of the FMA peak\n",
                flopsAll / oursAll * 1e-9, blasAll / oursAll, flopsAll / blasAll * 1e-9,
                flopsAll / oursAll * 1e-9 / peak);

    std::vector<Split> runs;
    enc.encode(pool); // warm-up: thread buffers, page faults
    for (int i = 0; i < opt.images; ++i)
      runs.push_back(enc.encode(pool));
    std::sort(runs.begin(), runs.end(),
              [](const Split &a, const Split &b) { return a.total < b.total; });
    const Split &best = runs.front(), &median = runs[runs.size() / 2];
    std::printf("  encode one image: best %.3f s, median %.3f s (%d images)\n",
                best.total, median.total, opt.images);
    std::printf("    matmuls   %5.1f%%  %.1f GFLOP in %.3f s = %.1f GFLOP/s, %.2f of the "
                "FMA peak\n",
                100 * best.gemm / best.total, best.gemmFlops * 1e-9, best.gemm,
                best.gemmFlops / best.gemm * 1e-9, best.gemmFlops / best.gemm * 1e-9 / peak);
    const double globalAttention = best.attention - best.windowAttention;
    std::printf("    attention %5.1f%%  %.1f GFLOP in %.3f s = %.1f GFLOP/s (window layers "
                "%.1f, global layers %.1f GFLOP/s)\n",
                100 * best.attention / best.total, best.attentionFlops * 1e-9,
                best.attention, best.attentionFlops / best.attention * 1e-9,
                best.windowAttentionFlops / best.windowAttention * 1e-9,
                (best.attentionFlops - best.windowAttentionFlops) / globalAttention * 1e-9);
    std::printf("    rest      %5.1f%%  (patch unfold, LayerNorm, GELU)\n",
                100 * best.other / best.total);
    if (blas.ok()) {
      // The same GEMM calls, each followed at once by OpenBLAS on the same
      // operands: a ratio that the machine's noisy phases hit alike.
      const Split sh = enc.encode(pool, &blas);
      std::printf("    matmuls of one encode, each shadowed by OpenBLAS: gemmF32 %.1f, "
                  "OpenBLAS %.1f GFLOP/s: %.2f of OpenBLAS\n",
                  sh.gemmFlops / sh.gemm * 1e-9, sh.gemmFlops / sh.peerGemm * 1e-9,
                  sh.peerGemm / sh.gemm);
    }
  }
  return 0;
}
