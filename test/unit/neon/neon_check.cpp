// The NEON kernels against the generic ones, built for AArch64 and run
// under qemu-user by the `runtime.neon*` tests (test/unit/neon/
// CMakeLists.txt): no GoogleTest for the target, so a plain program that
// prints what it checked and exits non-zero on the first failure.
//
// Checks, on odd shapes and every packed format: qmatmul with int8x2 and
// int8 activations within the rigorous rounding bound of x against the
// generic f32-activation path (runtime/kernels/qmatmul_problem.h, as
// qmatmul_test.cpp), the same bits on 1, 2 and 3 threads; the same for the
// prefill GEMM (qgemm over repacked weights) on the NEON path and, where
// built with +i8mm, the usmmla path; f32 and f16-weight matmul within f32
// rounding; and the matvec of 2-8 rows (qmatmul, matmul f32/f16): each row
// bit for bit the 1-row call's (isa.h kMatvecMaxRows).
#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "kernels/qgemm.h"
#include "kernels/qmatmul.h"
#include "kernels/qmatmul_problem.h"
#include "kernels/quantize.h"
#include "base/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
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

// The problem of qmatmul_test.cpp (qmatmul_problem.h), run on NEON.
std::vector<float> runNeon(const testing::QMatmulProblem &p, QActivations act,
                           int threads) {
  std::vector<float> y(p.M * p.N, NAN);
  qmatmulOn(KernelIsa::Neon, act, p.x.data(), p.M, p.K, p.w.data(), p.f, p.N,
            y.data(), false, poolOf(threads));
  return y;
}

void checkQMatmul() {
  int checked = 0;
  uint32_t seed = 1;
  for (QuantFormat f : testing::allQuantFormats())
    for (int64_t M : {1, 2, 5, 8})
      for (int64_t K :
           {int64_t(f.group), int64_t(3 * f.group), int64_t(5 * f.group)})
        for (int64_t N : {1, 7, 33}) {
          const testing::QMatmulProblem p(f, M, K, N, seed++);
          std::vector<float> yg(M * N);
          qmatmulOn(KernelIsa::Generic, QActivations::F32, p.x.data(), M, K,
                    p.w.data(), f, N, yg.data(), false, nullptr);
          for (QActivations act : {QActivations::Int8x2, QActivations::Int8}) {
            const std::vector<float> y1 = runNeon(p, act, 1);
            const std::string what =
                std::string(qActivationsName(act)) + " " +
                testing::formatName(f) + " M=" + std::to_string(M) +
                " K=" + std::to_string(K) + " N=" + std::to_string(N);
            for (int64_t i = 0; i < M * N; ++i)
              if (!(std::fabs(double(y1[i]) - yg[i]) <= p.tolerance(i, act))) {
                fail(what + " at " + std::to_string(i) + ": " +
                     std::to_string(y1[i]) + " vs generic " +
                     std::to_string(yg[i]));
                return;
              }
            for (int threads : {2, 3})
              if (runNeon(p, act, threads) != y1) {
                fail(what + ": differs on " + std::to_string(threads) +
                     " threads");
                return;
              }
            for (int64_t m = 0; m < M && M > 1; ++m) {
              std::vector<float> row(N, NAN);
              qmatmulOn(KernelIsa::Neon, act, p.x.data() + m * K, 1, K,
                        p.w.data(), f, N, row.data(), false, nullptr);
              if (std::memcmp(row.data(), y1.data() + m * N,
                              N * sizeof(float)) != 0) {
                fail(what + ": row " + std::to_string(m) +
                     " differs from the 1-row call");
                return;
              }
            }
            ++checked;
          }
        }
  std::printf("  qmatmul: %d (mode, format, shape) cases within bound\n",
              checked);
}

void checkQGemm(GemmPath path) {
  if (!gemmPathAvailable(path)) {
    std::printf("  qgemm %s: not built\n", gemmPathName(path));
    return;
  }
  int checked = 0;
  uint32_t seed = 500;
  for (QuantFormat f : testing::allQuantFormats())
    // One row; a partial panel; several micro-tiles and two panels.
    for (auto [M, N] : {std::pair<int64_t, int64_t>{1, 33}, {3, 5}, {9, 33}})
      for (int64_t K : {int64_t(f.group), int64_t(3 * f.group)}) {
          const testing::QMatmulProblem p(f, M, K, N, seed++);
          const std::vector<uint8_t> w =
              repackForGemm(GemmLayout::Panel16, f, N, K, p.w.data());
          std::vector<float> yg(M * N);
          qmatmulOn(KernelIsa::Generic, QActivations::F32, p.x.data(), M, K,
                    p.w.data(), f, N, yg.data(), false, nullptr);
          for (QActivations act : {QActivations::Int8x2, QActivations::Int8,
                                   QActivations::Int11}) {
            auto run = [&](int threads) {
              std::vector<float> y(M * N, NAN);
              qgemmOn(path, p.x.data(), M, K, w.data(), GemmLayout::Panel16, f,
                      N, y.data(), false, poolOf(threads), act);
              return y;
            };
            const std::vector<float> y1 = run(1);
            const std::string what =
                std::string("qgemm ") + gemmPathName(path) + " " +
                qActivationsName(act) + " " + testing::formatName(f) +
                " M=" + std::to_string(M) + " K=" + std::to_string(K) +
                " N=" + std::to_string(N);
            for (int64_t i = 0; i < M * N; ++i)
              if (!(std::fabs(double(y1[i]) - yg[i]) <= p.tolerance(i, act))) {
                fail(what + " at " + std::to_string(i) + ": " +
                     std::to_string(y1[i]) + " vs generic " +
                     std::to_string(yg[i]));
                return;
              }
            for (int threads : {2, 3})
              if (run(threads) != y1) {
                fail(what + ": differs on " + std::to_string(threads) +
                     " threads");
                return;
              }
            ++checked;
          }
        }
  std::printf("  qgemm %s: %d (mode, format, shape) cases within bound\n",
              gemmPathName(path), checked);
}

void checkMatmul() {
  int checked = 0;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t M : {1, 3, 8, 17})
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
        matmulF16WOn(KernelIsa::Neon, x.data(), M, K, wh.data(), N, yhn.data(),
                     false, poolOf(2));
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
        for (int64_t m = 0; m < M && M > 1 && M <= kMatvecMaxRows; ++m) {
          std::vector<float> row(N), rowh(N);
          matmulF32On(KernelIsa::Neon, x.data() + m * K, 1, K, w.data(), N,
                      row.data(), false, nullptr);
          matmulF16WOn(KernelIsa::Neon, x.data() + m * K, 1, K, wh.data(), N,
                       rowh.data(), false, nullptr);
          if (std::memcmp(row.data(), yn.data() + m * N, N * sizeof(float)) ||
              std::memcmp(rowh.data(), yhn.data() + m * N,
                          N * sizeof(float))) {
            fail("matmul M=" + std::to_string(M) + " K=" + std::to_string(K) +
                 " N=" + std::to_string(N) + ": row " + std::to_string(m) +
                 " differs from the 1-row call");
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
  std::printf("neon_check (%s%s)\n",
#if defined(__ARM_FEATURE_DOTPROD)
              "sdot",
#else
              "smull/smlal",
#endif
#if defined(__ARM_FEATURE_MATMUL_INT8)
              ", i8mm"
#else
              ""
#endif
  );
#if defined(__ARM_FEATURE_MATMUL_INT8)
  // The sdot paths are checked by the +dotprod build; this one adds usmmla.
  checkQGemm(GemmPath::NeonI8mm);
#else
  checkQMatmul();
  checkQGemm(GemmPath::Neon);
  checkMatmul();
#endif
  std::printf(failures ? "neon_check: FAILED\n" : "neon_check: ok\n");
  return failures ? 1 : 0;
}
