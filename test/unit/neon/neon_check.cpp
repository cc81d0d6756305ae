// The NEON kernels against the generic ones, built for AArch64 and run
// under qemu-user by the `runtime.neon*` tests (test/unit/neon/
// CMakeLists.txt): no GoogleTest for the target, so a plain program that
// prints what it checked and exits non-zero on the first failure.
//
// Checks, on odd shapes and every packed format: qmatmul with int8x2 and
// int8 activations within the rigorous rounding bound of x against the
// generic f32-activation path (the bound of runtime/kernels/
// qmatmul_test.cpp), the same bits on 1, 2 and 3 threads; f32 and f16-weight
// matmul within f32 rounding.
#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "kernels/qmatmul.h"
#include "kernels/quantize.h"
#include "src/ThreadPool.h"

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

std::string name(QuantFormat f) {
  return "q" + std::to_string(f.bits) + "g" + std::to_string(f.group) +
         (f.grid == QuantGrid::Balanced ? "b" : "a");
}

int failures = 0;

void fail(const std::string &what) {
  std::printf("FAIL %s\n", what.c_str());
  ++failures;
}

// One packed problem: w (N x K), x (M x K) with zero blocks and outliers,
// the generic result and per-output bounds.
struct Problem {
  QuantFormat f;
  int64_t M, K, N;
  std::vector<uint8_t> w;
  std::vector<float> x, yGeneric;
  std::vector<double> mag, int8Err;

  Problem(QuantFormat fmt, int64_t m, int64_t k, int64_t n, uint32_t seed)
      : f(fmt), M(m), K(k), N(n) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> wf(N * K);
    for (float &v : wf)
      v = 0.05f * normal(rng) + 0.01f;
    const size_t rowBytes = packedRowBytes(f, K);
    w.resize(N * rowBytes);
    quantizeRows(wf.data(), N, K, f, w.data());
    std::vector<float> wdq(N * K);
    for (int64_t r = 0; r < N; ++r)
      dequantizeRow(w.data() + r * rowBytes, f, K, wdq.data() + r * K);
    x.resize(M * K);
    for (float &v : x)
      v = uniform(rng);
    const int64_t block = f.group < 64 ? f.group : 64;
    for (int64_t b = 0; b < M * K / block; ++b) {
      if (rng() % 7 == 0)
        std::fill(x.begin() + b * block, x.begin() + (b + 1) * block, 0.0f);
      else if (rng() % 5 == 0)
        x[b * block + rng() % block] = 20.0f * uniform(rng);
    }
    mag.assign(M * N, 0.0);
    int8Err.assign(M * N, 0.0);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        for (int64_t b = 0; b < K / block; ++b) {
          double amax = 0.0;
          for (int64_t kk = 0; kk < block; ++kk)
            amax = std::max(amax, std::fabs(double(x[i * K + b * block + kk])));
          for (int64_t kk = b * block; kk < (b + 1) * block; ++kk) {
            const double wv = wdq[j * K + kk];
            mag[i * N + j] += std::fabs(wv * x[i * K + kk]);
            int8Err[i * N + j] += std::fabs(wv) * amax / 127.0 * 0.5;
          }
        }
    yGeneric.resize(M * N);
    qmatmulOn(KernelIsa::Generic, QActivations::F32, x.data(), M, K, w.data(),
              f, N, yGeneric.data(), false, nullptr);
  }

  std::vector<float> run(QActivations act, int threads) const {
    std::vector<float> y(M * N, NAN);
    qmatmulOn(KernelIsa::Neon, act, x.data(), M, K, w.data(), f, N, y.data(),
              false, poolOf(threads));
    return y;
  }
};

void checkQMatmul() {
  int checked = 0;
  uint32_t seed = 1;
  for (int bits : {2, 4, 8})
    for (int group : {32, 64, 128})
      for (QuantGrid grid : {QuantGrid::Balanced, QuantGrid::Affine})
        for (int64_t M : {1, 2, 5})
          for (int64_t K : {int64_t(group), int64_t(3 * group),
                            int64_t(5 * group)})
            for (int64_t N : {1, 7, 33}) {
              const Problem p({bits, group, grid}, M, K, N, seed++);
              for (QActivations act :
                   {QActivations::Int8x2, QActivations::Int8}) {
                // int8: half a step of max|x| / 127 per input; int8x2: the
                // second digit's half step, or its clamp at +-127 steps.
                const double scale =
                    act == QActivations::Int8 ? 1.0 : 2.0 / 256.0;
                const std::vector<float> y1 = p.run(act, 1);
                const std::string what = std::string(qActivationsName(act)) +
                                         " " + name(p.f) +
                                         " M=" + std::to_string(M) +
                                         " K=" + std::to_string(K) +
                                         " N=" + std::to_string(N);
                for (int64_t i = 0; i < M * N; ++i) {
                  const double tol = scale * p.int8Err[i] * 1.001 +
                                     2e-5 * (p.mag[i] + 1.0);
                  if (!(std::fabs(double(y1[i]) - p.yGeneric[i]) <= tol)) {
                    fail(what + " at " + std::to_string(i) + ": " +
                         std::to_string(y1[i]) + " vs generic " +
                         std::to_string(p.yGeneric[i]));
                    return;
                  }
                }
                for (int threads : {2, 3})
                  if (p.run(act, threads) != y1) {
                    fail(what + ": differs on " + std::to_string(threads) +
                         " threads");
                    return;
                  }
                ++checked;
              }
            }
  std::printf("  qmatmul: %d (mode, format, shape) cases within bound\n",
              checked);
}

void checkMatmul() {
  int checked = 0;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t M : {1, 3, 17})
    for (int64_t K : {1, 15, 64, 129})
      for (int64_t N : {1, 5, 33}) {
        std::vector<float> x(M * K), w(N * K);
        std::vector<uint16_t> wh(N * K);
        for (float &v : x)
          v = normal(rng);
        for (int64_t i = 0; i < N * K; ++i) {
          wh[i] = floatToHalf(normal(rng));
          w[i] = halfToFloat(wh[i]);
        }
        std::vector<float> yg(M * N), yn(M * N), yhg(M * N), yhn(M * N);
        matmulF32On(KernelIsa::Generic, x.data(), M, K, w.data(), N, yg.data(),
                    false, nullptr);
        matmulF32On(KernelIsa::Neon, x.data(), M, K, w.data(), N, yn.data(),
                    false, poolOf(2));
        matmulF16WOn(KernelIsa::Generic, x.data(), M, K, wh.data(), N,
                     yhg.data(), false, nullptr);
        matmulF16WOn(KernelIsa::Neon, x.data(), M, K, wh.data(), N,
                     yhn.data(), false, poolOf(2));
        for (int64_t i = 0; i < M * N; ++i) {
          double mag = 0.0;
          for (int64_t k = 0; k < K; ++k)
            mag += std::fabs(double(x[i / N * K + k]) * w[i % N * K + k]);
          const double tol = 1e-5 * (mag + 1.0);
          if (!(std::fabs(yn[i] - yg[i]) <= tol) ||
              !(std::fabs(yhn[i] - yhg[i]) <= tol)) {
            fail("matmul M=" + std::to_string(M) + " K=" + std::to_string(K) +
                 " N=" + std::to_string(N) + " at " + std::to_string(i));
            return;
          }
        }
        ++checked;
      }
  std::printf("  matmul f32/f16: %d shapes within f32 rounding\n", checked);
}

} // namespace

int main() {
  if (!kernelIsaAvailable(KernelIsa::Neon)) {
    std::printf("neon_check: the NEON path is not available\n");
    return 1;
  }
  std::printf("neon_check (%s)\n",
#if defined(__ARM_FEATURE_DOTPROD)
              "sdot"
#else
              "smull/smlal"
#endif
  );
  checkQMatmul();
  checkMatmul();
  std::printf(failures ? "neon_check: FAILED\n" : "neon_check: ok\n");
  return failures ? 1 : 0;
}
