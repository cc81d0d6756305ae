// Checks the generic qmatmul against a double-precision dequantize+matmul,
// and every SIMD path and activation mode this CPU runs against the generic
// one (within the activation rounding bound: int8 and int8x2 digits), on odd
// shapes, every format, with and without accumulation, on 1-3 threads; and
// each row of the matvec of 2-8 rows bit for bit the 1-row call's.
#include "kernels/qmatmul.h"
#include "kernels/qmatmul_problem.h"

#include "kernels/qgemm.h" // cpuName

#include "kernels/quantize.h"
#include "base/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace fm::kernels {
namespace {

fm::rt::ThreadPool *poolOf(int threads) {
  static std::unique_ptr<fm::rt::ThreadPool> pools[4];
  if (!pools[threads])
    pools[threads] = std::make_unique<fm::rt::ThreadPool>(threads);
  return pools[threads].get();
}

using testing::allQuantFormats;
using testing::formatName;

// A QMatmulProblem (qmatmul_problem.h) that runs itself on a path.
struct Problem : testing::QMatmulProblem {
  using QMatmulProblem::QMatmulProblem;

  std::vector<float> run(KernelIsa path, bool accumulate, int threads,
                         QActivations act = QActivations::Int8x2) {
    std::vector<float> y = accumulate ? y0 : std::vector<float>(M * N, NAN);
    qmatmulOn(path, act, x.data(), M, K, w.data(), f, N, y.data(), accumulate,
              poolOf(threads));
    return y;
  }
};

std::vector<int64_t> kMs = {1, 2, 3, 7, 17, 33};
std::vector<int64_t> kNs = {1, 3, 33, 257};

TEST(QMatmul, GenericMatchesDoubleReference) {
  uint32_t seed = 1;
  for (QuantFormat f : allQuantFormats())
    for (int64_t M : kMs)
      for (int64_t K :
           {int64_t(f.group), 2 * int64_t(f.group), 5 * int64_t(f.group)})
        for (int64_t N : kNs) {
          Problem p(f, M, K, N, seed++);
          for (bool acc : {false, true}) {
            std::vector<float> y = p.run(KernelIsa::Generic, acc, 1);
            for (int64_t i = 0; i < M * N; ++i) {
              double expect = p.ref[i] + (acc ? p.y0[i] : 0.0);
              ASSERT_NEAR(y[i], expect, 1e-5 * (p.mag[i] + 1.0))
                  << formatName(f) << " M=" << M << " K=" << K << " N=" << N
                  << " acc=" << acc << " at " << i;
            }
          }
        }
}

// Every path and activation mode this CPU runs, against the generic path:
// within the rounding bound of x (QMatmulProblem::tolerance: int8 dx / 2
// per input; int8x2 dx / 256, the second digit's half step or its clamp at
// +-127; f32 f32 rounding), and the same bits on 1, 2 and 3 threads.
TEST(QMatmul, PathsMatchGeneric) {
  struct Run {
    std::string name;
    KernelIsa path;
    QActivations act;
  };
  std::vector<Run> runs;
  for (KernelIsa path : {KernelIsa::Avx2, KernelIsa::Avx512, KernelIsa::Neon})
    if (kernelIsaAvailable(path)) {
      runs.push_back({std::string(kernelIsaName(path)) + "-int8x2", path,
                      QActivations::Int8x2});
      runs.push_back({std::string(kernelIsaName(path)) + "-int8", path,
                      QActivations::Int8});
    }
  if (kernelIsaAvailable(KernelIsa::Avx512))
    runs.push_back({"avx512-f32", KernelIsa::Avx512, QActivations::F32});
  if (runs.empty())
    GTEST_SKIP() << "no SIMD path on this CPU";
  for (const Run &r : runs)
    std::printf("  checking %s\n", r.name.c_str());
  uint32_t seed = 1000;
  int checked = 0;
  for (QuantFormat f : allQuantFormats())
    for (int64_t M : kMs)
      for (int64_t K :
           {int64_t(f.group), 2 * int64_t(f.group), 5 * int64_t(f.group)})
        for (int64_t N : kNs) {
          Problem p(f, M, K, N, seed++);
          for (bool acc : {false, true}) {
            std::vector<float> yg = p.run(KernelIsa::Generic, acc, 1);
            for (const Run &r : runs) {
              std::vector<float> y1 = p.run(r.path, acc, 1, r.act);
              for (int64_t i = 0; i < M * N; ++i) {
                ASSERT_NEAR(y1[i], yg[i], p.tolerance(i, r.act))
                    << r.name << " " << formatName(f) << " M=" << M
                    << " K=" << K << " N=" << N << " acc=" << acc << " at "
                    << i;
              }
              for (int threads : {2, 3}) {
                std::vector<float> yt = p.run(r.path, acc, threads, r.act);
                for (int64_t i = 0; i < M * N; ++i)
                  ASSERT_EQ(yt[i], y1[i])
                      << r.name << " " << formatName(f) << " M=" << M
                      << " K=" << K << " N=" << N << " threads=" << threads
                      << " at " << i;
              }
              ++checked;
            }
          }
        }
  std::printf("  %d (path, format, shape, accumulate) cases\n", checked);
}

// Where the CPU has GFNI, the AVX-512 VNNI kernel takes its 2- and 4-bit
// planes out of the weight bytes with vgf2p8affineqb: the same bytes as a
// shift and a mask, so the same outputs bit for bit, for every format, the
// matvec (M = 1, the decode kernel) and the prefill tiles, both activation
// modes, 1 and 2 threads. ctest runs it alone as runtime.qkernels.gfni
// (runtime/kernels/quant.cmake), whose SKIP_REGULAR_EXPRESSION matches the
// skip message, so that ctest reports it Skipped on a CPU without them.
TEST(QMatmul, GfniPlanesMatchShiftAndMask) {
  if (!qmatmulAvx512ShiftMaskAvailable())
    GTEST_SKIP() << "no AVX512-VNNI with GFNI on this CPU (" << cpuName()
                 << "; qmatmul path " << qmatmulPathName() << ")";
  EXPECT_STREQ(qmatmulPathName(), "avx512-gfni");
  uint32_t seed = 3000;
  int checked = 0;
  for (QuantFormat f : allQuantFormats())
    for (int64_t M : {int64_t(1), int64_t(4)})
      for (int64_t K : {int64_t(f.group), 3 * int64_t(f.group),
                        std::max<int64_t>(512, 2 * f.group)})
        for (int64_t N : {int64_t(5), int64_t(67)}) {
          Problem p(f, M, K, N, seed++);
          for (QActivations act : {QActivations::Int8x2, QActivations::Int8})
            for (int threads : {1, 2}) {
              const std::vector<float> gfni =
                  p.run(KernelIsa::Avx512, true, threads, act);
              std::vector<float> shiftMask = p.y0;
              qmatmulAvx512ShiftMaskOn(act, p.x.data(), M, K, p.w.data(), f, N,
                                       shiftMask.data(), true,
                                       poolOf(threads));
              for (int64_t i = 0; i < M * N; ++i)
                ASSERT_EQ(gfni[i], shiftMask[i])
                    << formatName(f) << " " << qActivationsName(act)
                    << " M=" << M << " K=" << K << " N=" << N
                    << " threads=" << threads << " at " << i;
              ++checked;
            }
        }
  std::printf("  %d (format, shape, activations, threads) cases\n", checked);
}

// The matvec of 2 .. kMatvecMaxRows rows (speculative verification, batched
// decode) unpacks each weight tile once for all of them: row i of an m-row
// call must be bit for bit the 1-row call on row i alone (the decode step),
// on every path, activation mode and format, with and without accumulation,
// on 1 and 2 threads, and within the rounding bound of the double-precision
// reference. N covers whole and partial tiles of w rows; K a tail step.
TEST(QMatmul, MatvecRowsAreOneRowCalls) {
  struct Run {
    std::string name;
    KernelIsa path;
    QActivations act;
    bool shiftMask; // qmatmulAvx512ShiftMaskOn
  };
  std::vector<Run> runs = {{"generic", KernelIsa::Generic,
                            QActivations::Int8x2, false}};
  for (KernelIsa path : {KernelIsa::Avx2, KernelIsa::Avx512, KernelIsa::Neon})
    if (kernelIsaAvailable(path))
      for (QActivations act : {QActivations::Int8x2, QActivations::Int8})
        runs.push_back({std::string(kernelIsaName(path)) + "-" +
                            qActivationsName(act),
                        path, act, false});
  if (kernelIsaAvailable(KernelIsa::Avx512))
    runs.push_back({"avx512-f32", KernelIsa::Avx512, QActivations::F32, false});
  if (qmatmulAvx512ShiftMaskAvailable())
    for (QActivations act : {QActivations::Int8x2, QActivations::Int8})
      runs.push_back({std::string("avx512-shift-mask-") + qActivationsName(act),
                      KernelIsa::Avx512, act, true});
  for (const Run &r : runs)
    std::printf("  checking %s\n", r.name.c_str());
  auto call = [](const Run &r, const float *x, int64_t M, int64_t K,
                 const uint8_t *w, QuantFormat f, int64_t N, float *y,
                 bool acc, int threads) {
    if (r.shiftMask)
      qmatmulAvx512ShiftMaskOn(r.act, x, M, K, w, f, N, y, acc,
                               poolOf(threads));
    else
      qmatmulOn(r.path, r.act, x, M, K, w, f, N, y, acc, poolOf(threads));
  };
  uint32_t seed = 5000;
  int checked = 0;
  for (QuantFormat f : allQuantFormats())
    for (int64_t M : {1, 2, 3, 5, int(kMatvecMaxRows)})
      for (int64_t K : {int64_t(f.group), 5 * int64_t(f.group)})
        for (int64_t N : {int64_t(1), int64_t(7), int64_t(70)}) {
          Problem p(f, M, K, N, seed++);
          for (const Run &r : runs)
            for (bool acc : {false, true})
              for (int threads : {1, 2}) {
                std::vector<float> y =
                    acc ? p.y0 : std::vector<float>(M * N, NAN);
                call(r, p.x.data(), M, K, p.w.data(), f, N, y.data(), acc,
                     threads);
                for (int64_t m = 0; m < M; ++m) {
                  std::vector<float> y1 =
                      acc ? std::vector<float>(p.y0.begin() + m * N,
                                               p.y0.begin() + (m + 1) * N)
                          : std::vector<float>(N, NAN);
                  call(r, p.x.data() + m * K, 1, K, p.w.data(), f, N,
                       y1.data(), acc, 1);
                  ASSERT_EQ(std::memcmp(y.data() + m * N, y1.data(),
                                        N * sizeof(float)),
                            0)
                      << r.name << " " << formatName(f) << " M=" << M
                      << " K=" << K << " N=" << N << " acc=" << acc
                      << " threads=" << threads << ": row " << m
                      << " differs from the 1-row call";
                }
                for (int64_t i = 0; i < M * N; ++i) {
                  const double expect = p.ref[i] + (acc ? p.y0[i] : 0.0);
                  ASSERT_NEAR(y[i], expect,
                              p.tolerance(i, r.act) + 1e-5 * (p.mag[i] + 1.0))
                      << r.name << " " << formatName(f) << " M=" << M
                      << " K=" << K << " N=" << N << " acc=" << acc << " at "
                      << i;
                }
                ++checked;
              }
        }
  std::printf("  %d (path, format, shape, accumulate, threads) cases\n",
              checked);
}

TEST(QMatmul, DispatchedIsBestPath) {
  const QuantFormat f{2, 64, QuantGrid::Balanced};
  Problem p(f, 3, 256, 40, 5);
  std::vector<float> y(3 * 40);
  qmatmul(p.x.data(), 3, 256, p.w.data(), f, 40, y.data(), false, nullptr);
  EXPECT_EQ(y, p.run(kernelIsaBest(), false, 1));
  std::printf("  qmatmul path: %s\n", qmatmulPathName());
}

// A NaN or inf in x makes the outputs it feeds non-finite on every path
// (and is no undefined behaviour on the way).
TEST(QMatmul, NonFiniteActivationsPropagate) {
  for (QuantFormat f : {QuantFormat{2, 64, QuantGrid::Balanced},
                        QuantFormat{4, 32, QuantGrid::Affine},
                        QuantFormat{8, 128, QuantGrid::Balanced}}) {
    for (float bad : {NAN, INFINITY}) {
      Problem p(f, 2, 256, 9, 21);
      p.x[100] = bad; // row 0 only
      for (KernelIsa path : {KernelIsa::Generic, KernelIsa::Avx2,
                             KernelIsa::Avx512, KernelIsa::Neon}) {
        if (!kernelIsaAvailable(path))
          continue;
        for (QActivations act :
             {QActivations::Int8x2, QActivations::Int8, QActivations::F32}) {
          std::vector<float> y = p.run(path, false, 1, act);
          for (int64_t n = 0; n < 9; ++n) {
            EXPECT_FALSE(std::isfinite(y[n]))
                << kernelIsaName(path) << " " << qActivationsName(act) << " "
                << formatName(f) << " " << n;
            EXPECT_TRUE(std::isfinite(y[9 + n]))
                << kernelIsaName(path) << " " << qActivationsName(act) << " "
                << formatName(f) << " " << n;
          }
        }
      }
    }
  }
}

// Decode-sized shapes: the rounding of x against the generic path's f32 x.
// int8: within 1e-2 of max|y| for normal x; with three outlier channels at
// 30x the blocks holding them lose precision (the known cost of per-block
// int8): 5e-2. int8x2: 256x finer digits, 1e-4 and 5e-4.
// (PathsMatchGeneric checks the rigorous bounds.)
TEST(QMatmul, ActivationRoundingError) {
  const int64_t M = 4, K = 2048, N = 256;
  std::vector<KernelIsa> paths;
  for (KernelIsa path : {KernelIsa::Avx2, KernelIsa::Avx512, KernelIsa::Neon})
    if (kernelIsaAvailable(path))
      paths.push_back(path);
  if (paths.empty())
    GTEST_SKIP() << "no SIMD path on this CPU";
  for (QuantFormat f : allQuantFormats()) {
    Problem p(f, M, K, N, 77);
    for (bool outliers : {false, true}) {
      std::mt19937 rng(78);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      for (float &v : p.x)
        v = normal(rng);
      if (outliers)
        for (int64_t i = 0; i < M; ++i)
          for (int64_t c : {5, 700, 1500})
            p.x[i * K + c] *= 30.0f;
      const std::vector<float> yg = p.run(KernelIsa::Generic, false, 1);
      for (KernelIsa path : paths)
        for (QActivations act : {QActivations::Int8x2, QActivations::Int8}) {
          const std::vector<float> y = p.run(path, false, 2, act);
          double maxErr = 0.0, maxY = 0.0, sqErr = 0.0, sqY = 0.0;
          for (int64_t i = 0; i < M * N; ++i) {
            maxErr = std::max(maxErr, std::fabs(double(y[i]) - yg[i]));
            maxY = std::max(maxY, std::fabs(double(yg[i])));
            sqErr += (double(y[i]) - yg[i]) * (double(y[i]) - yg[i]);
            sqY += double(yg[i]) * yg[i];
          }
          std::printf("  %-6s %-6s %-7s %-8s max|err|/max|y| %.2e  rms err/rms "
                      "y %.2e\n",
                      kernelIsaName(path), qActivationsName(act),
                      formatName(f).c_str(), outliers ? "outliers" : "normal",
                      maxErr / maxY, std::sqrt(sqErr / sqY));
          const double bound = act == QActivations::Int8
                                   ? (outliers ? 5e-2 : 1e-2)
                                   : (outliers ? 5e-4 : 1e-4);
          EXPECT_LE(maxErr, bound * maxY)
              << kernelIsaName(path) << " " << qActivationsName(act) << " "
              << formatName(f) << " " << outliers;
        }
    }
  }
}

} // namespace
} // namespace fm::kernels
