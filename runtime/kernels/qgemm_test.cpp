// Checks repackForGemm against qgemm_layout.h's description (QGemmLayout),
// every qgemm path and activation mode this CPU runs against the generic
// qmatmul (f32 x, the qformat.h rows): within the rounding bound of x (the
// same bound as qmatmul_test.cpp), the same bits on 1, 2 and 3 threads, on
// odd shapes and every format (QGemm), and the dispatched qgemm on the best
// path (QGemmDispatch).
//
// FM_TEST_GEMM_PATHS picks the paths that the QGemm tests run, by
// gemmPathName, comma-separated:
//   (unset)              every path this CPU runs
//   amx                  the listed paths only
//   -avx512-vnni,-amx    every path but the listed ones
// A listed name that is no path fails every QGemm test. A selected path this
// CPU lacks is left out; where none of the selected paths runs, every QGemm
// test skips with "qgemm path amx is not available on this CPU (<its
// CPUID name>)". ctest runs the x86 paths that some CI machines lack in
// entries of their own (runtime/kernels/qgemm.cmake): runtime.qgemm.amx
// (FM_TEST_GEMM_PATHS=amx, --gtest_filter=QGemm.*) and
// runtime.qgemm.avx512-vnni, whose SKIP_REGULAR_EXPRESSION matches that
// message, so that ctest reports them Skipped on such a CPU; runtime.qgemm
// runs the rest (FM_TEST_GEMM_PATHS=-avx512-vnni,-amx) and QGemmLayout and
// QGemmDispatch, whose results do not depend on the selection.
#include "kernels/qgemm.h"
#include "kernels/qmatmul.h"
#include "kernels/qmatmul_problem.h"

#include "kernels/quantize.h"
#include "base/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
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

// The value of a half, independently of halfToFloat.
double halfValue(uint16_t h) {
  const int e = (h >> 10) & 0x1f, mant = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0)
    return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, e - 25);
}

// Weight (n, k) of a Panel16 weight, decoded from qgemm_layout.h's text
// alone.
double documentedPanelValue(const std::vector<uint8_t> &w, QuantFormat f,
                            int64_t N, int64_t K, int64_t n, int64_t k) {
  const int64_t Kp = (K + 63) / 64 * 64, groups = Kp / f.group;
  const int64_t blockBytes = 16 * 64 * f.bits / 8;
  const int64_t halves = groups * 16 * 2;
  const int64_t panelBytes =
      Kp / 64 * blockBytes + halves * (f.grid == QuantGrid::Affine ? 2 : 1);
  (void)N;
  const uint8_t *panel = w.data() + (n / 16) * panelBytes;
  const int r = static_cast<int>(n % 16);
  const uint8_t *block = panel + (k / 64) * blockBytes;
  const int i = static_cast<int>(k % 64), t = i / 4, V = 2 * f.bits;
  const int byte = 4 * r + i % 4;
  const int q =
      (block[(t % V) * 64 + byte] >> (f.bits * (t / V))) & ((1 << f.bits) - 1);
  const int64_t g = k / f.group;
  auto half = [&](int64_t offset) {
    const uint8_t *h = panel + offset + g * 32 + 2 * r;
    return halfValue(static_cast<uint16_t>(h[0] | (h[1] << 8)));
  };
  const double s = half(Kp / 64 * blockBytes);
  if (f.grid == QuantGrid::Affine)
    return q * s + half(Kp / 64 * blockBytes + groups * 32);
  return (q - ((1 << f.bits) - 1) / 2.0) * s;
}

TEST(QGemmLayout, RepackedWeightsMatchTheDocumentation) {
  uint32_t seed = 1;
  for (QuantFormat f : allQuantFormats())
    for (int64_t N : {1, 16, 21})
      for (int64_t K : {int64_t(f.group), 3 * int64_t(f.group)}) {
        const testing::QMatmulProblem p(f, 1, K, N, seed++);
        ASSERT_EQ(gemmLayoutProblem(GemmLayout::Panel16, f, N, K), "");
        const std::vector<uint8_t> w =
            repackForGemm(GemmLayout::Panel16, f, N, K, p.w.data());
        ASSERT_EQ(w.size(), gemmPackedBytes(GemmLayout::Panel16, f, N, K));
        if (N % 16 == 0 && K % 64 == 0) {
          EXPECT_EQ(w.size(), N * packedRowBytes(f, K)) << "same bits/weight";
        }
        for (int64_t n = 0; n < N; ++n)
          for (int64_t k = 0; k < K; ++k)
            ASSERT_EQ(documentedPanelValue(w, f, N, K, n, k), p.wdq[n * K + k])
                << formatName(f) << " N=" << N << " K=" << K << " at " << n
                << "," << k;
      }
}

TEST(QGemmLayout, ProblemsAreNamed) {
  const QuantFormat f{2, 64, QuantGrid::Balanced};
  EXPECT_EQ(gemmLayoutProblem(GemmLayout::Panel16, f, 4, 96),
            "K = 96 is not a multiple of the group 64");
  EXPECT_NE(gemmLayoutProblem(GemmLayout::Panel16, {3, 64, QuantGrid::Balanced},
                              4, 64),
            "");
  EXPECT_NE(gemmLayoutProblem(GemmLayout::Panel16, f, 0, 64), "");
  EXPECT_NE(gemmLayoutProblem(static_cast<GemmLayout>(7), f, 4, 64), "");
  EXPECT_TRUE(repackForGemm(GemmLayout::Panel16, f, 4, 96, nullptr).empty());
}

struct GemmRun {
  std::string name;
  GemmPath path;
  QActivations act;
};

constexpr GemmPath kAllGemmPaths[] = {GemmPath::Generic,    GemmPath::Avx2,
                                      GemmPath::Avx512Vnni, GemmPath::Amx,
                                      GemmPath::Neon,       GemmPath::NeonI8mm};

// The paths FM_TEST_GEMM_PATHS selects (the file comment), or why it selects
// none.
struct PathSelection {
  std::vector<GemmPath> paths;
  std::string error;
};

PathSelection selectedPaths() {
  PathSelection s;
  const char *env = std::getenv("FM_TEST_GEMM_PATHS");
  if (!env || !*env) {
    s.paths.assign(std::begin(kAllGemmPaths), std::end(kAllGemmPaths));
    return s;
  }
  const std::string spec = env;
  const bool exclude = spec[0] == '-';
  std::vector<GemmPath> listed;
  size_t begin = 0;
  while (begin <= spec.size()) {
    size_t end = spec.find(',', begin);
    if (end == std::string::npos)
      end = spec.size();
    std::string name = spec.substr(begin, end - begin);
    begin = end + 1;
    if (!name.empty() && (name[0] == '-') != exclude) {
      s.error = "FM_TEST_GEMM_PATHS=" + spec +
                " mixes paths to run and paths to leave out ('-name')";
      return s;
    }
    if (exclude)
      name.erase(0, 1);
    const GemmPath *path =
        std::find_if(std::begin(kAllGemmPaths), std::end(kAllGemmPaths),
                     [&](GemmPath p) { return name == gemmPathName(p); });
    if (path == std::end(kAllGemmPaths)) {
      s.error = "FM_TEST_GEMM_PATHS=" + spec + ": '" + name +
                "' is not a qgemm path (generic, avx2, avx512-vnni, amx, "
                "neon, neon-i8mm)";
      return s;
    }
    listed.push_back(*path);
  }
  for (GemmPath p : kAllGemmPaths)
    if ((std::find(listed.begin(), listed.end(), p) != listed.end()) != exclude)
      s.paths.push_back(p);
  return s;
}

// Every activation mode of each selected path that this CPU runs, and
// generic-f32 where generic is selected.
std::vector<GemmRun> availableRuns(const std::vector<GemmPath> &paths) {
  std::vector<GemmRun> runs;
  for (GemmPath path : paths)
    if (gemmPathAvailable(path))
      for (QActivations act :
           {QActivations::Int8x2, QActivations::Int8, QActivations::Int11})
        runs.push_back({std::string(gemmPathName(path)) + "-" +
                            qActivationsName(act),
                        path, act});
  if (std::find(paths.begin(), paths.end(), GemmPath::Generic) != paths.end())
    runs.push_back({"generic-f32", GemmPath::Generic, QActivations::F32});
  return runs;
}

// The tests over every selected path: selectedRuns() holds their runs.
// Skips the test where none of the selected paths runs on this CPU, in the
// words that the ctest entries' SKIP_REGULAR_EXPRESSION matches
// (qgemm.cmake).
class QGemm : public ::testing::Test {
protected:
  void SetUp() override {
    const PathSelection s = selectedPaths();
    ASSERT_EQ(s.error, "");
    runs_ = availableRuns(s.paths);
    if (runs_.empty()) {
      std::string names;
      for (GemmPath p : s.paths)
        names += (names.empty() ? "" : ", ") + std::string(gemmPathName(p));
      GTEST_SKIP() << (s.paths.size() == 1 ? "qgemm path " + names + " is"
                                           : "qgemm paths " + names + " are")
                   << " not available on this CPU (" << cpuName() << ")";
    }
  }
  const std::vector<GemmRun> &selectedRuns() const { return runs_; }

private:
  std::vector<GemmRun> runs_;
};

std::vector<float> runGemm(const testing::QMatmulProblem &p,
                           const std::vector<uint8_t> &w, const GemmRun &r,
                           bool accumulate, int threads) {
  std::vector<float> y = accumulate ? p.y0 : std::vector<float>(p.M * p.N, NAN);
  qgemmOn(r.path, p.x.data(), p.M, p.K, w.data(), GemmLayout::Panel16, p.f,
          p.N, y.data(), accumulate, poolOf(threads), r.act);
  return y;
}

// Every run of `runs` on 1 thread against the generic qmatmul (f32 x)
// within the mode's rounding bound of x, and the same bits on `threads`.
void expectMatchesGeneric(const testing::QMatmulProblem &p,
                          const std::vector<uint8_t> &w,
                          const std::vector<GemmRun> &runs, bool acc,
                          std::initializer_list<int> threads) {
  const int64_t M = p.M, K = p.K, N = p.N;
  std::vector<float> yg = acc ? p.y0 : std::vector<float>(M * N);
  qmatmulOn(KernelIsa::Generic, QActivations::F32, p.x.data(), M, K,
            p.w.data(), p.f, N, yg.data(), acc, nullptr);
  for (const GemmRun &r : runs) {
    const std::vector<float> y1 = runGemm(p, w, r, acc, 1);
    for (int64_t i = 0; i < M * N; ++i)
      ASSERT_NEAR(y1[i], yg[i], p.tolerance(i, r.act))
          << r.name << " " << formatName(p.f) << " M=" << M << " K=" << K
          << " N=" << N << " acc=" << acc << " at " << i;
    for (int t : threads)
      ASSERT_EQ(runGemm(p, w, r, acc, t), y1)
          << r.name << " " << formatName(p.f) << " M=" << M << " K=" << K
          << " N=" << N << " threads=" << t;
  }
}

// The generic qmatmul's y for p (f32 x), the reference of the tests below.
std::vector<float> genericY(const testing::QMatmulProblem &p) {
  std::vector<float> y(p.M * p.N);
  qmatmulOn(KernelIsa::Generic, QActivations::F32, p.x.data(), p.M, p.K,
            p.w.data(), p.f, p.N, y.data(), false, nullptr);
  return y;
}

// Run r of p on 1 thread within the mode's bound of yg, and the same bits on
// 2 and 3 threads; returns the 1-thread y. `what` names the case.
std::vector<float> expectRunMatches(const testing::QMatmulProblem &p,
                                    const std::vector<uint8_t> &w,
                                    const GemmRun &r,
                                    const std::vector<float> &yg,
                                    const std::string &what) {
  const std::vector<float> y1 = runGemm(p, w, r, false, 1);
  for (int64_t i = 0; i < p.M * p.N; ++i) {
    EXPECT_NEAR(y1[i], yg[i], p.tolerance(i, r.act))
        << r.name << " " << what << " at " << i;
    if (::testing::Test::HasFailure())
      return y1;
  }
  for (int threads : {2, 3})
    EXPECT_EQ(runGemm(p, w, r, false, threads), y1)
        << r.name << " " << what << " threads=" << threads;
  return y1;
}

// Every path and mode against the generic qmatmul (f32 x): within the
// rounding bound of x for the mode (QMatmulProblem::tolerance), and the
// same bits on 1, 2 and 3 threads.
TEST_F(QGemm, PathsMatchGenericQmatmul) {
  const std::vector<GemmRun> &runs = selectedRuns();
  for (const GemmRun &r : runs)
    std::printf("  checking %s\n", r.name.c_str());
  std::printf("  on %s\n", cpuName().c_str());
  uint32_t seed = 2000;
  int checked = 0;
  for (QuantFormat f : allQuantFormats())
    for (int64_t M : {1, 2, 3, 7, 17, 33, 70})
      for (int64_t K : {int64_t(f.group), 3 * int64_t(f.group)})
        for (int64_t N : {1, 17, 33, 50}) {
          const testing::QMatmulProblem p(f, M, K, N, seed++);
          const std::vector<uint8_t> w =
              repackForGemm(GemmLayout::Panel16, f, N, K, p.w.data());
          for (bool acc : {false, true}) {
            expectMatchesGeneric(p, w, runs, acc, {2, 3});
            if (::testing::Test::HasFatalFailure())
              return;
            checked += static_cast<int>(runs.size());
          }
        }
  std::printf("  %d (path, format, shape, accumulate) cases\n", checked);
}

// Large enough to split across threads and over several work units (two
// row blocks, odd panel counts), on every path.
TEST_F(QGemm, LargeShapesAcrossThreads) {
  const std::vector<GemmRun> &runs = selectedRuns();
  uint32_t seed = 3000;
  for (QuantFormat f : {QuantFormat{2, 64, QuantGrid::Balanced},
                        QuantFormat{4, 32, QuantGrid::Affine},
                        QuantFormat{8, 128, QuantGrid::Balanced}}) {
    const int64_t M = 130, K = 512, N = 208;
    const testing::QMatmulProblem p(f, M, K, N, seed++);
    const std::vector<uint8_t> w =
        repackForGemm(GemmLayout::Panel16, f, N, K, p.w.data());
    const std::vector<float> yg = genericY(p);
    for (const GemmRun &r : runs) {
      if (r.act == QActivations::F32)
        continue;
      expectRunMatches(p, w, r, yg, formatName(f));
      if (::testing::Test::HasFailure())
        return;
    }
  }
}

// A lone x row (decode's matvec from the Panel16 layout) over many panels,
// odd and even panel counts, split across threads, in every format: within
// the bound of the generic qmatmul, the same bits on 2 and 3 threads, and,
// where the AVX-512 matvec takes tile rows out with GFNI, the same bits
// with them split by shift and mask (the same integer dots and folds).
TEST_F(QGemm, MatvecAcrossPanels) {
  const std::vector<GemmRun> &runs = selectedRuns();
  // The paths whose matvec takes GFNI where the CPU has it.
  auto takesGfni = [](const GemmRun &r) {
    return r.path == GemmPath::Avx512Vnni || r.path == GemmPath::Amx;
  };
  const bool gfni = qgemmMatvecUsesGfni();
  if (!gfni && std::any_of(runs.begin(), runs.end(), takesGfni))
    std::printf("  [ SKIPPED ] shift and mask against GFNI: no GFNI matvec "
                "on %s\n",
                cpuName().c_str());
  uint32_t seed = 3200;
  int compared = 0;
  for (QuantFormat f : allQuantFormats())
    for (int64_t N : {208, 1000}) {
      const int64_t M = 1, K = 384;
      const testing::QMatmulProblem p(f, M, K, N, seed++);
      const std::vector<uint8_t> w =
          repackForGemm(GemmLayout::Panel16, f, N, K, p.w.data());
      const std::vector<float> yg = genericY(p);
      for (const GemmRun &r : runs) {
        if (r.act == QActivations::F32)
          continue;
        const std::vector<float> y1 = expectRunMatches(
            p, w, r, yg, formatName(f) + " N=" + std::to_string(N));
        if (::testing::Test::HasFailure())
          return;
        if (gfni && takesGfni(r)) {
          qgemmAllowMatvecGfni(false);
          const std::vector<float> y2 = runGemm(p, w, r, false, 1);
          qgemmAllowMatvecGfni(true);
          ASSERT_EQ(y2, y1) << r.name << " " << formatName(f)
                            << ": shift and mask against GFNI, N=" << N;
          ++compared;
        }
      }
    }
  if (compared > 0)
    std::printf("  %d runs: shift and mask the same bits as GFNI\n", compared);
}

// Enough rows of a wide K that a thread's units run in several bands of row
// units (qgemm.cpp's runUnits: 6 row units of 64, 4 to a band at K = 3072
// with int8x2), with thread ranges that start and end inside a panel pair:
// every output once, on every path.
TEST_F(QGemm, RowBandsAcrossThreads) {
  const std::vector<GemmRun> &runs = selectedRuns();
  const QuantFormat f{4, 32, QuantGrid::Balanced};
  const int64_t M = 330, K = 3072, N = 80;
  const testing::QMatmulProblem p(f, M, K, N, 3100);
  const std::vector<uint8_t> w =
      repackForGemm(GemmLayout::Panel16, f, N, K, p.w.data());
  const std::vector<float> yg = genericY(p);
  for (const GemmRun &r : runs) {
    if (r.act == QActivations::F32)
      continue;
    expectRunMatches(p, w, r, yg, "row bands");
    if (::testing::Test::HasFailure())
      return;
  }
}

// Balanced group 32 at 2 and 4 bits, and group 64 at 2 bits under int11
// (AMX: rangeG32, signed quants and register accumulators over chunks of
// 16 units; at group 64 two 32-input units share a scale): a K of several
// chunks with a partial last one and an odd unit count (group 32: a
// padding unit), an odd panel count, and a last A tile with few rows, on
// every path.
TEST_F(QGemm, GroupThirtyTwoAcrossChunks) {
  const std::vector<GemmRun> &runs = selectedRuns();
  uint32_t seed = 3200;
  for (QuantFormat f : {QuantFormat{2, 32, QuantGrid::Balanced},
                        QuantFormat{4, 32, QuantGrid::Balanced},
                        QuantFormat{2, 64, QuantGrid::Balanced}}) {
    const int64_t M = 21, K = (f.group == 32 ? 33 : 17) * f.group, N = 40;
    const testing::QMatmulProblem p(f, M, K, N, seed++);
    const std::vector<uint8_t> w =
        repackForGemm(GemmLayout::Panel16, f, N, K, p.w.data());
    for (bool acc : {false, true}) {
      expectMatchesGeneric(p, w, runs, acc, {2});
      if (::testing::Test::HasFatalFailure())
        return;
    }
  }
}

// The integer paths quantize x as qmatmul does, so they agree with
// qmatmul's own SIMD path to float rounding (much tighter than the bound
// against f32 x).
TEST(QGemmDispatch, SameActivationRoundingAsQmatmul) {
  const KernelIsa isa = kernelIsaBest();
  if (isa == KernelIsa::Generic)
    GTEST_SKIP() << "no SIMD qmatmul on this CPU";
  uint32_t seed = 4000;
  for (QuantFormat f : allQuantFormats()) {
    const int64_t M = 9, K = 4 * f.group, N = 40;
    const testing::QMatmulProblem p(f, M, K, N, seed++);
    const std::vector<uint8_t> w =
        repackForGemm(GemmLayout::Panel16, f, N, K, p.w.data());
    for (QActivations act : {QActivations::Int8x2, QActivations::Int8}) {
      std::vector<float> yq(M * N), yg(M * N);
      qmatmulOn(isa, act, p.x.data(), M, K, p.w.data(), f, N, yq.data(), false,
                nullptr);
      qgemmOn(gemmPathBest(), p.x.data(), M, K, w.data(), GemmLayout::Panel16,
              f, N, yg.data(), false, nullptr, act);
      for (int64_t i = 0; i < M * N; ++i)
        ASSERT_NEAR(yg[i], yq[i], 2e-5 * (p.mag[i] + 1.0))
            << gemmPathName(gemmPathBest()) << " " << qActivationsName(act)
            << " " << formatName(f) << " at " << i;
    }
  }
}

// int11 is one rounding on every path: each path's int11 (AMX's pair tile
// for balanced group 32 at 2 and 4 bits and group 64 at 2, two dots
// elsewhere; x blocks of 32 inputs everywhere) agrees with the
// generic path's int11 to float rounding, far inside the gap between int11
// and the other modes.
TEST_F(QGemm, Int11IsOneRoundingOnEveryPath) {
  uint32_t seed = 4100;
  int checked = 0;
  for (QuantFormat f : allQuantFormats())
    for (int64_t M : {int64_t(5), int64_t(40)}) {
      const int64_t K = 5 * f.group, N = 40;
      const testing::QMatmulProblem p(f, M, K, N, seed++);
      const std::vector<uint8_t> w =
          repackForGemm(GemmLayout::Panel16, f, N, K, p.w.data());
      std::vector<float> ref(M * N);
      qgemmOn(GemmPath::Generic, p.x.data(), M, K, w.data(),
              GemmLayout::Panel16, f, N, ref.data(), false, nullptr,
              QActivations::Int11);
      for (const GemmRun &r : selectedRuns()) {
        if (r.act != QActivations::Int11 || r.path == GemmPath::Generic)
          continue;
        const std::vector<float> y = runGemm(p, w, r, false, 1);
        for (int64_t i = 0; i < M * N; ++i)
          ASSERT_NEAR(y[i], ref[i], 2e-5 * (p.mag[i] + 1.0))
              << r.name << " " << formatName(f) << " M=" << M << " at " << i;
        ++checked;
      }
    }
  std::printf("  %d (path, format, shape) cases against generic int11\n",
              checked);
}

// The modes' precision against f32 x, on the best path: int11's rms error
// is well under int8's and above int8x2's. Where the CPU has AMX its steps
// are 16x finer than int8's at 4 bits (12-bit x: under a tenth; 11-bit x
// measured 0.12) and 32x at 2 bits (13-bit: under a sixteenth); elsewhere
// int11 is one rounding at the same bits on every path.
TEST(QGemmDispatch, Int11SitsBetweenInt8AndInt8x2) {
  for (QuantFormat f : {QuantFormat{4, 32, QuantGrid::Balanced},
                        QuantFormat{2, 32, QuantGrid::Balanced},
                        QuantFormat{2, 64, QuantGrid::Balanced}}) {
    const int64_t M = 24, K = 1024, N = 64;
    const testing::QMatmulProblem p(f, M, K, N, 4200);
    const std::vector<uint8_t> w =
        repackForGemm(GemmLayout::Panel16, f, N, K, p.w.data());
    auto rmsError = [&](QActivations act) {
      std::vector<float> y(M * N);
      qgemm(p.x.data(), M, K, w.data(), GemmLayout::Panel16, f, N, y.data(),
            false, nullptr, act);
      double e = 0.0;
      for (int64_t i = 0; i < M * N; ++i)
        e += (y[i] - p.ref[i]) * (y[i] - p.ref[i]);
      return std::sqrt(e / double(M * N));
    };
    const double e8 = rmsError(QActivations::Int8),
                 e11 = rmsError(QActivations::Int11),
                 e16 = rmsError(QActivations::Int8x2);
    std::printf("  %s %s: rms error int8 %.3g, int11 %.3g, int8x2 %.3g\n",
                gemmPathName(gemmPathBest()), formatName(f).c_str(), e8, e11,
                e16);
    EXPECT_LT(e11, (f.bits == 2 ? 1.0 / 16 : 0.1) * e8) << formatName(f);
    EXPECT_GT(e11, e16) << formatName(f);
  }
}

// Int11Fast is Int11 exactly where the best path takes it in one tile per
// unit (AMX: balanced group 32 at 2 or 4 bits, group 64 at 2) and Int8x2
// everywhere else, bit for bit, through qgemm and through the split
// qgemmPrepareRows / qgemmColumns.
TEST(QGemmDispatch, Int11FastTakesInt11OnlyInOneTile) {
  uint32_t seed = 4300;
  int eleven = 0;
  for (QuantFormat f : allQuantFormats()) {
    const int64_t M = 20, K = 4 * f.group, N = 48;
    const testing::QMatmulProblem p(f, M, K, N, seed++);
    const std::vector<uint8_t> w =
        repackForGemm(GemmLayout::Panel16, f, N, K, p.w.data());
    auto run = [&](QActivations act) {
      std::vector<float> y(M * N);
      qgemm(p.x.data(), M, K, w.data(), GemmLayout::Panel16, f, N, y.data(),
            false, nullptr, act);
      return y;
    };
    const bool one = gemmTakesInt11InOneTile(f);
    EXPECT_EQ(one, gemmPathBest() == GemmPath::Amx &&
                       f.grid == QuantGrid::Balanced &&
                       (f.group == 32 ? f.bits == 2 || f.bits == 4
                                      : f.group == 64 && f.bits == 2))
        << formatName(f);
    eleven += one;
    const std::vector<float> fastY = run(QActivations::Int11Fast);
    EXPECT_EQ(fastY, run(one ? QActivations::Int11 : QActivations::Int8x2))
        << formatName(f);
    std::vector<uint8_t> scratch(qgemmScratchBytes(f, M, K, QActivations::Int11Fast));
    qgemmPrepareRows(p.x.data(), M, K, f, QActivations::Int11Fast, scratch.data(), 0,
                     M);
    std::vector<float> split(M * N);
    qgemmColumns(p.x.data(), M, K, w.data(), f, N, split.data(), N, false,
                 QActivations::Int11Fast, scratch.data(), 0, N);
    EXPECT_EQ(split, fastY) << formatName(f);
  }
  std::printf("  int11-fast takes int11 for %d formats on %s\n", eleven,
              gemmPathName(gemmPathBest()));
}

// A NaN or inf in x makes the outputs it feeds non-finite on every path.
TEST_F(QGemm, NonFiniteActivationsPropagate) {
  for (QuantFormat f : {QuantFormat{2, 64, QuantGrid::Balanced},
                        QuantFormat{4, 32, QuantGrid::Affine},
                        QuantFormat{8, 128, QuantGrid::Balanced}})
    for (float bad : {NAN, INFINITY}) {
      testing::QMatmulProblem p(f, 2, 256, 9, 21);
      p.x[100] = bad; // row 0 only
      const std::vector<uint8_t> w =
          repackForGemm(GemmLayout::Panel16, f, 9, 256, p.w.data());
      for (const GemmRun &r : selectedRuns()) {
        const std::vector<float> y = runGemm(p, w, r, false, 1);
        for (int64_t n = 0; n < 9; ++n) {
          EXPECT_FALSE(std::isfinite(y[n])) << r.name << " " << formatName(f);
          EXPECT_TRUE(std::isfinite(y[9 + n])) << r.name << " " << formatName(f);
        }
      }
    }
}

TEST(QGemmDispatch, DispatchedIsBestPath) {
  const QuantFormat f{4, 64, QuantGrid::Balanced};
  const testing::QMatmulProblem p(f, 20, 256, 40, 5);
  const std::vector<uint8_t> w =
      repackForGemm(GemmLayout::Panel16, f, 40, 256, p.w.data());
  std::vector<float> a(20 * 40), b(20 * 40);
  qgemm(p.x.data(), 20, 256, w.data(), GemmLayout::Panel16, f, 40, a.data(),
        false, nullptr);
  qgemmOn(gemmPathBest(), p.x.data(), 20, 256, w.data(), GemmLayout::Panel16, f,
          40, b.data(), false, nullptr, QActivations::Int8x2);
  EXPECT_EQ(a, b);
  std::printf("  qgemm path: %s (%s)\n", gemmPathName(gemmPathBest()),
              cpuName().c_str());
}

} // namespace
} // namespace fm::kernels
