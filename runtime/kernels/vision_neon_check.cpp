// The image-encoder kernels built for AArch64 and run under qemu-user by
// the `runtime.vision_kernels.neon` test (vision.cmake), as
// test/unit/neon/neon_check.cpp does for matmul: no GoogleTest for the
// target, so a plain program that prints what it checked and exits
// non-zero on any failure.
//
// Checks: the NEON packed GEMM against a double reference on odd shapes
// (bias, accumulate, 1-3 threads bit-identical); the generic ViT attention,
// LayerNorm and GELU as compiled for AArch64 (NEON baseline) against the
// same double formulas as the x86 tests.
#include "kernels/conv.h"
#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/pointwise.h"
#include "kernels/vit_attention.h"
#include "kernels/vit_attention_reference.h"
#include "base/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace fm::kernels;

fm::rt::ThreadPool *poolOf(int threads) {
  static std::unique_ptr<fm::rt::ThreadPool> pools[4];
  if (!pools[threads])
    pools[threads] = std::make_unique<fm::rt::ThreadPool>(threads);
  return pools[threads].get();
}

int failures = 0;

void fail(const std::string &what) {
  std::printf("FAIL %s\n", what.c_str());
  ++failures;
}

std::vector<float> random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

void checkGemm() {
  int checked = 0;
  uint32_t seed = 1;
  for (int64_t M : {1, 7, 9, 300})
    for (int64_t K : {1, 13, 257})
      for (int64_t N : {1, 11, 13, 50}) {
        auto x = random(M * K, seed++), w = random(N * K, seed++),
             b = random(N, seed++), y0 = random(M * N, seed++);
        std::vector<float> first;
        for (int threads : {1, 2, 3}) {
          std::vector<float> y = y0;
          gemmF32On(KernelIsa::Neon, x.data(), M, K, w.data(), N, b.data(),
                    y.data(), true, poolOf(threads));
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double s = double(y0[i * N + j]) + b[j], mag = std::fabs(s);
              for (int64_t l = 0; l < K; ++l) {
                s += double(x[i * K + l]) * w[j * K + l];
                mag += std::fabs(double(x[i * K + l]) * w[j * K + l]);
              }
              if (std::fabs(y[i * N + j] - s) > 1e-5 * mag + 1e-6) {
                fail("gemm M=" + std::to_string(M) + " K=" + std::to_string(K) +
                     " N=" + std::to_string(N));
                return;
              }
            }
          if (first.empty())
            first = y;
          else if (y != first)
            fail("gemm depends on the thread count");
        }
        ++checked;
      }
  std::printf("gemm (neon): %d shapes x 3 thread counts\n", checked);
}

void checkAttention() {
  struct Case {
    int64_t R, gh, gw, H, D, window;
  };
  int checked = 0;
  for (Case c : {Case{2, 10, 10, 2, 16, 4}, Case{3, 6, 5, 2, 12, 0},
                 Case{1, 7, 9, 1, 20, 3}}) {
    const int64_t C = c.H * c.D, rows = c.R + c.gh * c.gw;
    const int64_t Sh = c.window ? c.window : c.gh, Sw = c.window ? c.window : c.gw;
    auto qkv = random(rows * 3 * C, 5), relH = random((2 * Sh - 1) * c.D, 6),
         relW = random((2 * Sw - 1) * c.D, 7), pad = random(3 * C, 8);
    std::vector<float> out(rows * C);
    VitAttentionArgs a;
    a.qkv = qkv.data();
    a.registers = c.R;
    a.gridH = c.gh;
    a.gridW = c.gw;
    a.H = c.H;
    a.D = c.D;
    a.scale = 1.0f / std::sqrt(float(c.D));
    a.window = c.window;
    a.relPosH = relH.data();
    a.relPosW = relW.data();
    a.padQkv = pad.data();
    a.out = out.data();
    vitAttention(a, poolOf(2));
    const std::vector<double> want = reference::vitAttention(a);
    for (size_t i = 0; i < out.size(); ++i)
      if (std::fabs(out[i] - want[i]) > 2e-5) {
        fail("vitAttention grid " + std::to_string(c.gh) + "x" +
             std::to_string(c.gw) + " window " + std::to_string(c.window));
        break;
      }
    ++checked;
  }
  std::printf("vitAttention (generic on aarch64): %d shapes\n", checked);
}

void checkPointwise() {
  std::vector<float> x;
  for (int i = -8 * 256; i <= 8 * 256; ++i)
    x.push_back(float(i) / 256.0f);
  std::vector<float> g = x, q = x;
  activate(Activation::Gelu, g.data(), int64_t(g.size()), poolOf(2));
  activate(Activation::QuickGelu, q.data(), int64_t(q.size()), nullptr);
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], tol = 3e-7 * std::max(1.0, std::fabs(v));
    if (std::fabs(g[i] - 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)))) > tol ||
        std::fabs(q[i] - v / (1.0 + std::exp(-1.702 * v))) > tol) {
      fail("activation at x=" + std::to_string(v));
      break;
    }
  }
  const int64_t C = 37;
  auto in = random(5 * C, 9), w = random(C, 10), b = random(C, 11);
  std::vector<float> y(in.size());
  layerNorm(in.data(), 5, C, w.data(), b.data(), 1e-6f, y.data(), nullptr);
  for (int64_t r = 0; r < 5; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c)
      mean += in[r * C + c];
    mean /= C;
    for (int64_t c = 0; c < C; ++c)
      var += (in[r * C + c] - mean) * (in[r * C + c] - mean);
    var /= C;
    for (int64_t c = 0; c < C; ++c) {
      double want = (in[r * C + c] - mean) / std::sqrt(var + 1e-6) * w[c] + b[c];
      if (std::fabs(y[r * C + c] - want) > 1e-5)
        fail("layerNorm row " + std::to_string(r));
    }
  }
  std::printf("activations and layerNorm (generic on aarch64)\n");
}

} // namespace

int main() {
  if (!kernelIsaAvailable(KernelIsa::Neon)) {
    std::printf("FAIL neon not available\n");
    return 1;
  }
  checkGemm();
  checkAttention();
  checkPointwise();
  std::printf("%s\n", failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
