// qgemm: picks the GEMM path for this CPU once, prepares the activations
// into a per-thread scratch buffer and splits calls across threads.
#include "kernels/qgemm.h"

#include "kernels/isa.h"
#include "kernels/qgemm_isa.h"
#include "base/ThreadPool.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>

#if defined(FM_KERNELS_X86)
#include <cpuid.h>
#endif

namespace fm::kernels {
namespace {

using gdetail::GemmIsa;

// Work units: 2 panels (32 outputs: the kernels' 2 B tiles) by a block of
// up to kUnitRows x rows (int8x2: 128 prepared rows, 8 AMX tiles), numbered
// panel-major so that a thread's contiguous range reads each weight panel
// from memory once.
constexpr int64_t kUnitPanels = 2;
constexpr int64_t kUnitRows = gdetail::kMaxUnitRows;
// Prepared activations of one band of row units (runUnits).
constexpr int64_t kBandBytes = int64_t(768) << 10;
// Below this many multiply-adds a call runs on the calling thread.
constexpr int64_t kMinParallelWork = int64_t(1) << 18;

const GemmIsa &isaTable(GemmPath path, QActivations act) {
  assert(gemmPathAvailable(path) && "qgemm path not available");
  if (act == QActivations::F32 || !gemmPathAvailable(path))
    return gdetail::kGemmGenericF32;
  const int pair = act == QActivations::Int8 ? 1 : 0;
  switch (path) {
#if defined(FM_KERNELS_X86)
  case GemmPath::Avx2:
    return gdetail::kGemmAvx2[pair];
  case GemmPath::Avx512Vnni:
    return gdetail::kGemmAvx512Vnni[pair];
  case GemmPath::Amx:
    return gdetail::kGemmAmx[pair];
#endif
#if defined(FM_KERNELS_NEON)
  case GemmPath::Neon:
    return gdetail::kGemmNeon[pair];
#if defined(__ARM_FEATURE_MATMUL_INT8)
  case GemmPath::NeonI8mm:
    return gdetail::kGemmNeonI8mm[pair];
#endif
#endif
  default:
    return gdetail::kGemmGeneric[pair];
  }
}

// The calling thread's buffer for prepared activations, for calls given no
// scratch: grown (64-byte aligned) when a call needs more, never shrunk,
// freed at thread exit.
class Scratch {
public:
  ~Scratch() { std::free(data_); }
  uint8_t *get(size_t bytes) {
    if (bytes > size_) {
      std::free(data_);
      size_ = (bytes + 4095) / 4096 * 4096;
      data_ = static_cast<uint8_t *>(std::aligned_alloc(64, size_));
    }
    return data_;
  }

private:
  uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

thread_local Scratch tScratch;

} // namespace

const char *gemmPathName(GemmPath path) {
  switch (path) {
  case GemmPath::Generic:
    return "generic";
  case GemmPath::Avx2:
    return "avx2";
  case GemmPath::Avx512Vnni:
    return "avx512-vnni";
  case GemmPath::Amx:
    return "amx";
  case GemmPath::Neon:
    return "neon";
  case GemmPath::NeonI8mm:
    return "neon-i8mm";
  }
  return "unknown";
}

bool gemmPathAvailable(GemmPath path) {
  switch (path) {
  case GemmPath::Generic:
    return true;
#if defined(FM_KERNELS_X86)
  case GemmPath::Avx2:
    return kernelIsaAvailable(KernelIsa::Avx2);
  case GemmPath::Avx512Vnni:
    return cpuHasAvx512Vnni();
  case GemmPath::Amx:
    // The epilogue is AVX-512; every AMX CPU has it. FM_MAX_CPU_ISA may
    // cap the kernels below AMX (isa.h).
    return cpuHasAvx512Vnni() && cpuIsaAllowsAmx() && gdetail::amxUsable();
#endif
#if defined(FM_KERNELS_NEON)
  case GemmPath::Neon:
    return true; // baseline on AArch64
#if defined(__ARM_FEATURE_MATMUL_INT8)
  case GemmPath::NeonI8mm:
    return true; // compiled for a CPU with i8mm
#endif
#endif
  default:
    return false;
  }
}

bool qgemmMatvecUsesGfni() {
#if defined(FM_KERNELS_X86)
  return cpuHasAvx512Vnni() && cpuHasGfni() &&
         gdetail::gMatvecGfni.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void qgemmAllowMatvecGfni(bool allowed) {
#if defined(FM_KERNELS_X86)
  gdetail::gMatvecGfni.store(allowed, std::memory_order_relaxed);
#else
  (void)allowed;
#endif
}

GemmPath gemmPathBest() {
  static const GemmPath best = [] {
    for (GemmPath p : {GemmPath::Amx, GemmPath::Avx512Vnni, GemmPath::Avx2,
                       GemmPath::NeonI8mm, GemmPath::Neon})
      if (gemmPathAvailable(p))
        return p;
    return GemmPath::Generic;
  }();
  return best;
}

std::string cpuName() {
#if defined(FM_KERNELS_X86)
  unsigned regs[12] = {};
  unsigned top = __get_cpuid_max(0x80000000u, nullptr);
  if (top >= 0x80000004u) {
    for (unsigned i = 0; i < 3; ++i)
      __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1],
                  &regs[4 * i + 2], &regs[4 * i + 3]);
    char name[49] = {};
    std::memcpy(name, regs, 48);
    std::string s(name);
    const size_t b = s.find_first_not_of(' ');
    return b == std::string::npos ? "x86-64" : s.substr(b);
  }
  return "x86-64";
#elif defined(__aarch64__)
  return "AArch64";
#else
  return "unknown CPU";
#endif
}

bool gemmTakesInt11InOneTile(GemmPath path, QuantFormat f) {
  return gemmPathAvailable(path) &&
         gdetail::usesPairTile(isaTable(path, QActivations::Int11), f, true);
}

bool gemmTakesInt11InOneTile(QuantFormat f) {
  return gemmTakesInt11InOneTile(gemmPathBest(), f);
}

namespace {
// Int11Fast: Int11 where `path` takes it in one tile per group, else Int8x2.
QActivations resolve(GemmPath path, QuantFormat f, QActivations act) {
  if (act != QActivations::Int11Fast)
    return act;
  return gemmTakesInt11InOneTile(path, f) ? QActivations::Int11
                                          : QActivations::Int8x2;
}
} // namespace

size_t qgemmScratchBytes(QuantFormat f, int64_t M, int64_t K,
                         QActivations act) {
  act = resolve(gemmPathBest(), f, act);
  if (act == QActivations::F32 || M <= 0)
    return 0; // the f32 path reads x as it is
  const gdetail::ActSizes sz =
      gdetail::actSizes(f, M, K, act == QActivations::Int8 ? 1 : 2,
                        act == QActivations::Int11);
  return static_cast<size_t>((sz.xqBytes + 63) / 64 * 64) +
         sizeof(float) * static_cast<size_t>(sz.dxFloats + sz.xsFloats);
}

namespace {

// One call's operands; with `prepare`, p.act points into `buf` (the layout
// of qgemmScratchBytes).
gdetail::Params params(const GemmIsa &isa, const float *x, int64_t M,
                       int64_t K, const uint8_t *w, QuantFormat f, int64_t N,
                       float *y, int64_t ldy, bool accumulate,
                       QActivations act, const uint8_t *buf) {
  gdetail::Params p{};
  p.w = w;
  p.f = f;
  p.geo = panelGeometry(f, N, K);
  p.N = N;
  p.K = K;
  p.xf = x;
  p.y = y;
  p.ldy = ldy;
  p.accumulate = accumulate;
  if (isa.prepare) {
    const int digits = act == QActivations::Int8 ? 1 : 2;
    const bool int11 = act == QActivations::Int11;
    const gdetail::ActSizes sz = gdetail::actSizes(f, M, K, digits, int11);
    const size_t xqBytes = static_cast<size_t>((sz.xqBytes + 63) / 64 * 64);
    gdetail::Act &a = p.act;
    a.xq = reinterpret_cast<const int8_t *>(buf);
    a.ldx = sz.kPadded;
    a.dx = reinterpret_cast<const float *>(buf + xqBytes);
    a.ldd = sz.kPadded / gdetail::actUnitInputs(f, int11);
    a.xs = a.dx + sz.dxFloats;
    a.lds = sz.kPadded / f.group;
    a.digits = digits;
    a.unit = gdetail::actUnitInputs(f, int11);
    a.hiShift = int11 ? gdetail::int11Shift(f) : gdetail::kInt8x2Shift;
    a.pairTile = gdetail::usesPairTile(isa, f, int11);
  }
  return p;
}

// Zeroes the prepared rows past M * D that fill out the last 16-row tile
// (int11: the last 16-row tile of x rows in the pair-tile layout too).
void zeroPadding(const gdetail::Params &p, int64_t M) {
  const gdetail::ActSizes sz =
      gdetail::actSizes(p.f, M, p.K, p.act.digits,
                        p.act.digits == 2 && p.act.hiShift != gdetail::kInt8x2Shift);
  std::memset(const_cast<int8_t *>(p.act.xq) + M * p.act.digits * sz.kPadded,
              0,
              static_cast<size_t>((sz.rowsPadded - M * p.act.digits) *
                                  sz.kPadded));
}

// Units [begin, end) (panel-major) of the panels [p0, p1), on the calling
// thread.
void runUnits(const GemmIsa &isa, const gdetail::Params &p, int64_t M,
              int64_t p0, int64_t p1, int64_t begin, int64_t end) {
  const int64_t mUnits = (M + kUnitRows - 1) / kUnitRows;
  if (isa.threadSetup)
    isa.threadSetup(p);
  if (M == 1) {
    // A matvec: the range's panels in one pass, so that its prefetch runs
    // on across the units.
    const int64_t q1 = p0 + end * kUnitPanels;
    isa.range(p, 0, 1, p0 + begin * kUnitPanels, q1 < p1 ? q1 : p1);
    if (isa.threadTeardown)
      isa.threadTeardown();
    return;
  }
  // The range's units by bands of row units whose prepared activations
  // fit in about half a core's L2 (kBandBytes), each band over all the
  // range's panels: a band's activations are read from L2 once per panel
  // pair instead of every row of x streaming from L3 for each pair (the
  // weights are unpacked per unit either way).
  const int64_t unitBytes =
      kUnitRows * (p.act.ldx > 0 ? p.act.ldx : p.K) * std::max(1, p.act.digits);
  const int64_t band = std::max<int64_t>(1, kBandBytes / unitBytes);
  const int64_t mLo = begin % mUnits, mHi = (end - 1) % mUnits;
  const int64_t pLo = begin / mUnits, pHi = (end - 1) / mUnits;
  for (int64_t b0 = 0; b0 < mUnits; b0 += band)
    for (int64_t pu = pLo; pu <= pHi; ++pu)
      for (int64_t mu = b0; mu < b0 + band && mu < mUnits; ++mu) {
        // Only the range's own units (its first and last panel units may
        // hold some of their row units).
        if ((pu == pLo && mu < mLo) || (pu == pHi && mu > mHi))
          continue;
        const int64_t m0 = mu * kUnitRows;
        const int64_t q0 = p0 + pu * kUnitPanels;
        const int64_t m1 = m0 + kUnitRows < M ? m0 + kUnitRows : M;
        const int64_t q1 = q0 + kUnitPanels < p1 ? q0 + kUnitPanels : p1;
        isa.range(p, m0, m1, q0, q1);
      }
  if (isa.threadTeardown)
    isa.threadTeardown();
}

} // namespace

void qgemmOn(GemmPath path, const float *x, int64_t M, int64_t K,
             const uint8_t *w, GemmLayout layout, QuantFormat f, int64_t N,
             float *y, bool accumulate, fm::rt::ThreadPool *pool,
             QActivations act, uint8_t *scratch) {
  assert(gemmLayoutProblem(layout, f, N, K).empty() && "bad qgemm shape");
  (void)layout;
  if (M <= 0 || N <= 0)
    return;
  act = resolve(path, f, act);
  const GemmIsa &isa = isaTable(path, act);
  uint8_t *buf = nullptr;
  if (isa.prepare)
    buf = scratch ? scratch : tScratch.get(qgemmScratchBytes(f, M, K, act));
  const gdetail::Params p =
      params(isa, x, M, K, w, f, N, y, N, accumulate, act, buf);
  const int64_t work = M * N * K;
  const bool parallel =
      pool && pool->numThreads() > 1 && work >= kMinParallelWork;
  if (isa.prepare) {
    zeroPadding(p, M);
    auto prepare = [&](int64_t begin, int64_t end) {
      isa.prepare(x, K, f, begin, end, p.act);
    };
    if (parallel && M > 1)
      pool->parallelFor(M, prepare);
    else
      prepare(0, M);
  }
  const int64_t mUnits = (M + kUnitRows - 1) / kUnitRows;
  const int64_t pUnits = (p.geo.panels + kUnitPanels - 1) / kUnitPanels;
  auto body = [&](int64_t begin, int64_t end) {
    runUnits(isa, p, M, 0, p.geo.panels, begin, end);
  };
  if (parallel)
    // Claimed in chunks of about an eighth of a thread's share: a thread on
    // a busy core takes fewer (the outputs do not depend on which thread
    // runs a unit).
    pool->parallelForDynamic(
        mUnits * pUnits,
        std::max<int64_t>(1, mUnits * pUnits / (8 * pool->numThreads())), body);
  else
    body(0, mUnits * pUnits);
}

void qgemmPrepareRows(const float *x, int64_t M, int64_t K, QuantFormat f,
                      QActivations act, uint8_t *scratch, int64_t m0,
                      int64_t m1) {
  act = resolve(gemmPathBest(), f, act);
  const GemmIsa &isa = isaTable(gemmPathBest(), act);
  const gdetail::Params p =
      params(isa, x, M, K, nullptr, f, 16, nullptr, 0, false, act, scratch);
  if (!isa.prepare || m0 >= m1)
    return;
  if (m0 == 0)
    zeroPadding(p, M);
  isa.prepare(x, K, f, m0, m1, p.act);
}

void qgemmColumns(const float *x, int64_t M, int64_t K, const uint8_t *w,
                  QuantFormat f, int64_t N, float *y, int64_t ldy,
                  bool accumulate, QActivations act, const uint8_t *scratch,
                  int64_t n0, int64_t n1) {
  assert(gemmLayoutProblem(GemmLayout::Panel16, f, N, K).empty() &&
         n0 % 16 == 0 && (n1 % 16 == 0 || n1 == N) && "bad qgemm columns");
  if (M <= 0 || n0 >= n1)
    return;
  act = resolve(gemmPathBest(), f, act);
  const GemmIsa &isa = isaTable(gemmPathBest(), act);
  const gdetail::Params p =
      params(isa, x, M, K, w, f, N, y, ldy, accumulate, act, scratch);
  const int64_t p0 = n0 / 16, p1 = (n1 + 15) / 16;
  const int64_t mUnits = (M + kUnitRows - 1) / kUnitRows;
  runUnits(isa, p, M, p0, p1, 0,
           mUnits * ((p1 - p0 + kUnitPanels - 1) / kUnitPanels));
}

void qgemm(const float *x, int64_t M, int64_t K, const uint8_t *w,
           GemmLayout layout, QuantFormat f, int64_t N, float *y,
           bool accumulate, fm::rt::ThreadPool *pool, QActivations act,
           uint8_t *scratch) {
  qgemmOn(gemmPathBest(), x, M, K, w, layout, f, N, y, accumulate, pool, act,
          scratch);
}

} // namespace fm::kernels
