// Chooses the qmatmul path for this CPU once, prepares the activations into
// a per-thread scratch buffer and splits calls across threads.
#include "kernels/qmatmul.h"

#include "kernels/isa.h"
#include "kernels/qmatmul_isa.h"
#include "base/ThreadPool.h"

#include <cassert>
#include <cstdlib>

namespace fm::kernels {
namespace {

using qdetail::QMatmulIsa;

// Matvec: rows of w per parallel work unit (a multiple of the kernels'
// 4-row tile; 16 rows keep each thread's stores to y on its own lines).
constexpr int64_t kMatvecUnitRows = 16;
// Below this many weights a call runs on the calling thread: waking the
// pool costs more than it saves.
constexpr int64_t kMinParallelWork = 1 << 15;
// Prefill work units: a block of w rows (reused from L2 across the x rows
// of the unit) by a block of x rows, numbered w-block-major so that a
// thread's contiguous range of units reads each w block from memory once.
constexpr int64_t kPrefillUnitRowsN = 64;
constexpr int64_t kPrefillUnitRowsM = 128;


const QMatmulIsa &isaTable(KernelIsa path, QActivations act) {
  assert(kernelIsaAvailable(path) && "qmatmul path not available");
  // Never run instructions this CPU lacks, even when asserts are off.
  if (!kernelIsaAvailable(path))
    return qdetail::kQMatmulGeneric;
  // Index into an ISA's pair of tables: [0] Int8x2, [1] Int8 (qmatmul_isa.h).
  // Int11 is a GEMM rounding: the matvec runs it (and Int11Fast) as Int8x2.
  const int pair = act == QActivations::Int8 ? 1 : 0;
  switch (path) {
#if defined(FM_KERNELS_X86)
  case KernelIsa::Avx2:
    return act == QActivations::F32 ? qdetail::kQMatmulGeneric
                                    : qdetail::kQMatmulAvx2[pair];
  case KernelIsa::Avx512:
    if (act == QActivations::F32)
      return qdetail::kQMatmulAvx512F32;
    if (!cpuHasAvx512Vnni())
      return qdetail::kQMatmulAvx2[pair];
    return cpuHasGfni() ? qdetail::kQMatmulAvx512VnniGfni[pair]
                        : qdetail::kQMatmulAvx512Vnni[pair];
#endif
#if defined(FM_KERNELS_NEON)
  case KernelIsa::Neon:
    return act == QActivations::F32 ? qdetail::kQMatmulGeneric
                                    : qdetail::kQMatmulNeon[pair];
#endif
  default:
    return qdetail::kQMatmulGeneric;
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

void run(const QMatmulIsa &isa, const float *x, int64_t M, int64_t K,
         const uint8_t *w, QuantFormat f, int64_t N, float *y, bool accumulate,
         fm::rt::ThreadPool *pool, uint8_t *scratch) {
  assert(isValidQuantFormat(f) && "invalid quant format");
  assert(K % f.group == 0 && "K must be a multiple of the group");
  if (M <= 0 || N <= 0)
    return;
  if (K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M * N; ++i)
        y[i] = 0.0f;
    return;
  }
  qdetail::Params p{w,         f,
                    K,         static_cast<int64_t>(packedRowBytes(f, K)),
                    x,         K * static_cast<int64_t>(sizeof(float)),
                    y,         N,
                    accumulate};
  const bool parallel =
      pool && pool->numThreads() > 1 && M * N * K >= kMinParallelWork;
  if (isa.prepare) {
    const int64_t rowBytes = isa.preparedRowBytes(f, K);
    uint8_t *act =
        scratch ? scratch : tScratch.get(static_cast<size_t>(M * rowBytes));
    auto prepare = [&](int64_t begin, int64_t end) {
      for (int64_t m = begin; m < end; ++m)
        isa.prepare(x + m * K, K, f, act + m * rowBytes);
    };
    if (parallel && M > 1)
      pool->parallelFor(M, prepare);
    else
      prepare(0, M);
    p.act = act;
    p.actStride = rowBytes;
  }
  if (M <= kMatvecMaxRows) {
    // The matvec (isa.h), split by output rows: every thread reads its
    // rows of w once for all M rows of x.
    if (!parallel) {
      isa.range(p, 0, M, 0, N);
      return;
    }
    const int64_t units = (N + kMatvecUnitRows - 1) / kMatvecUnitRows;
    pool->parallelFor(units, [&](int64_t begin, int64_t end) {
      const int64_t n1 = end * kMatvecUnitRows;
      isa.range(p, 0, M, begin * kMatvecUnitRows, n1 < N ? n1 : N);
    });
    return;
  }
  const int64_t mUnits = (M + kPrefillUnitRowsM - 1) / kPrefillUnitRowsM;
  const int64_t nUnits = (N + kPrefillUnitRowsN - 1) / kPrefillUnitRowsN;
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t m0 = (unit % mUnits) * kPrefillUnitRowsM;
      const int64_t n0 = (unit / mUnits) * kPrefillUnitRowsN;
      const int64_t m1 =
          m0 + kPrefillUnitRowsM < M ? m0 + kPrefillUnitRowsM : M;
      const int64_t n1 =
          n0 + kPrefillUnitRowsN < N ? n0 + kPrefillUnitRowsN : N;
      isa.range(p, m0, m1, n0, n1);
    }
  };
  if (parallel)
    pool->parallelFor(mUnits * nUnits, body);
  else
    body(0, mUnits * nUnits);
}

} // namespace

const char *qActivationsName(QActivations a) {
  switch (a) {
  case QActivations::Int8x2:
    return "int8x2";
  case QActivations::Int8:
    return "int8";
  case QActivations::F32:
    return "f32";
  case QActivations::Int11:
    return "int11";
  case QActivations::Int11Fast:
    return "int11-fast";
  }
  return "?";
}

const char *qmatmulPathName() {
  return isaTable(kernelIsaBest(), QActivations::Int8x2).name;
}

bool qmatmulAvx512ShiftMaskAvailable() {
#if defined(FM_KERNELS_X86)
  return kernelIsaAvailable(KernelIsa::Avx512) && cpuHasAvx512Vnni() &&
         cpuHasGfni();
#else
  return false;
#endif
}

void qmatmulAvx512ShiftMaskOn(QActivations act, const float *x, int64_t M,
                              int64_t K, const uint8_t *w, QuantFormat f,
                              int64_t N, float *y, bool accumulate,
                              fm::rt::ThreadPool *pool) {
  assert(qmatmulAvx512ShiftMaskAvailable() && act != QActivations::F32);
  const QMatmulIsa *isa = &qdetail::kQMatmulGeneric;
#if defined(FM_KERNELS_X86)
  // Never run instructions this CPU lacks, even when asserts are off.
  if (qmatmulAvx512ShiftMaskAvailable() && act != QActivations::F32)
    isa = &qdetail::kQMatmulAvx512Vnni[act == QActivations::Int8 ? 1 : 0];
#endif
  run(*isa, x, M, K, w, f, N, y, accumulate, pool, nullptr);
}

void qmatmulOn(KernelIsa path, QActivations act, const float *x, int64_t M,
               int64_t K, const uint8_t *w, QuantFormat f, int64_t N, float *y,
               bool accumulate, fm::rt::ThreadPool *pool, uint8_t *scratch) {
  run(isaTable(path, act), x, M, K, w, f, N, y, accumulate, pool, scratch);
}

size_t qmatmulScratchBytes(QuantFormat f, int64_t M, int64_t K,
                           QActivations act) {
  const QMatmulIsa &isa = isaTable(kernelIsaBest(), act);
  if (!isa.prepare || M <= 0 || K <= 0)
    return 0;
  return static_cast<size_t>(M * isa.preparedRowBytes(f, K));
}

int64_t qmatmulPreparedRowBytes(QuantFormat f, int64_t K, QActivations act) {
  const QMatmulIsa &isa = isaTable(kernelIsaBest(), act);
  return isa.prepare && K > 0 ? isa.preparedRowBytes(f, K) : 0;
}

void qmatmulPrepareRows(const float *x, int64_t K, QuantFormat f,
                        QActivations act, uint8_t *prepared, int64_t m0,
                        int64_t m1) {
  const QMatmulIsa &isa = isaTable(kernelIsaBest(), act);
  if (!isa.prepare || K <= 0)
    return;
  const int64_t rowBytes = isa.preparedRowBytes(f, K);
  for (int64_t m = m0; m < m1; ++m)
    isa.prepare(x + m * K, K, f, prepared + m * rowBytes);
}

void qmatmulBlock(const float *x, const uint8_t *prepared, int64_t K,
                  const uint8_t *w, QuantFormat f, float *y, int64_t ldy,
                  bool accumulate, QActivations act, int64_t m0, int64_t m1,
                  int64_t n0, int64_t n1) {
  assert(isValidQuantFormat(f) && K % f.group == 0 && "bad qmatmul block");
  if (m0 >= m1 || n0 >= n1 || K <= 0)
    return;
  const QMatmulIsa &isa = isaTable(kernelIsaBest(), act);
  qdetail::Params p{w,         f,
                    K,         static_cast<int64_t>(packedRowBytes(f, K)),
                    x,         K * static_cast<int64_t>(sizeof(float)),
                    y,         ldy,
                    accumulate};
  if (isa.prepare) {
    p.act = prepared;
    p.actStride = isa.preparedRowBytes(f, K);
  }
  isa.range(p, m0, m1, n0, n1);
}

void qmatmul(const float *x, int64_t M, int64_t K, const uint8_t *w,
             QuantFormat f, int64_t N, float *y, bool accumulate,
             fm::rt::ThreadPool *pool, QActivations act, uint8_t *scratch) {
  qmatmulOn(kernelIsaBest(), act, x, M, K, w, f, N, y, accumulate, pool,
            scratch);
}

} // namespace fm::kernels
