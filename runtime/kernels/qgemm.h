// Prefill as a real GEMM against packed low-bit weights: the weights are
// repacked once (when the CPU device loads them) into a GEMM layout (qgemm_layout.h), and
// qgemm runs int8 micro-kernels over it: AMX-INT8 tiles where the CPU has
// them, AVX-512 VNNI, AVX2, NEON (sdot, i8mm), or portable C++.
#pragma once

#include "kernels/qgemm_layout.h"
#include "kernels/qmatmul.h" // QActivations

#include <cstdint>
#include <string>
#include <vector>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::kernels {

/// Why N rows of K inputs in format f cannot be repacked into `layout`
/// ("K = 96 is not a multiple of the group 64"), or "" when they can.
std::string gemmLayoutProblem(GemmLayout layout, QuantFormat f, int64_t N,
                              int64_t K);

/// Bytes of the repacked weight (qgemm_layout.h); gemmLayoutProblem must be
/// "".
size_t gemmPackedBytes(GemmLayout layout, QuantFormat f, int64_t N,
                       int64_t K);

/// Repacks N rows of K inputs packed as qformat.h says (N *
/// packedRowBytes(f, K) bytes at `packed`) into `layout`, once per
/// weight. Empty when gemmLayoutProblem is not "".
std::vector<uint8_t> repackForGemm(GemmLayout layout, QuantFormat f,
                                   int64_t N, int64_t K, const uint8_t *packed);

/// repackForGemm of panels [panelBegin, panelEnd) only (panels of 16 rows,
/// panelGeometry in qgemm_layout.h), into `out` of gemmPackedBytes bytes:
/// disjoint panel ranges can be repacked by different threads. Writes
/// nothing when gemmLayoutProblem is not "".
void repackForGemmPanels(GemmLayout layout, QuantFormat f, int64_t N,
                         int64_t K, const uint8_t *packed, uint8_t *out,
                         int64_t panelBegin, int64_t panelEnd);

/// The GEMM kernel paths. Which ones this CPU runs: qgemmPathAvailable.
enum class GemmPath : uint8_t {
  Generic,    // portable C++ (int8 or f32 activations)
  Avx2,       // vpmaddubsw
  Avx512Vnni, // vpdpbusd
  Amx,        // AMX-INT8 tiles (tdpbsud), epilogue in AVX-512
  Neon,       // sdot where compiled with +dotprod, else smull/smlal
  NeonI8mm,   // usmmla (compiled with +i8mm)
};

/// "generic", "avx2", "avx512-vnni", "amx", "neon", "neon-i8mm".
const char *gemmPathName(GemmPath path);
/// Whether `path` is compiled in and this CPU (and OS, for AMX's tile
/// state) runs it.
bool gemmPathAvailable(GemmPath path);
/// The fastest available path; detected once.
GemmPath gemmPathBest();
/// Whether `path` (the best path) runs QActivations::Int11 on format f
/// with both digits in one tile per 32-input block (AMX, balanced group 32
/// at 2 or 4 bits, group 64 at 2): where QActivations::Int11Fast takes
/// Int11.
bool gemmTakesInt11InOneTile(GemmPath path, QuantFormat f);
bool gemmTakesInt11InOneTile(QuantFormat f);
/// The CPU's brand string (CPUID), for test and benchmark reports.
std::string cpuName();

/// y[M][N] (+)= x[M][K] · dequant(w)ᵀ for w repacked into `layout` (N rows
/// of K inputs in format f). With `accumulate` the products are added to
/// y, otherwise y is overwritten; y must not overlap x or w. `act` chooses
/// how x enters the integer dot products, with the same rounding as
/// qmatmul (blocks of min(group, 64) inputs, QActivations): the integer
/// dots are exact, so results differ from qmatmul's only in the float
/// summation order. QActivations::Int11 is qgemm's own (qmatmul runs
/// Int8x2 for it), the same on every path; Int11Fast is Int11 or Int8x2 per
/// gemmTakesInt11InOneTile. QActivations::F32 runs the
/// generic f32 path (decoding
/// the weights; slow: prefill should use an integer mode). Split across
/// `pool` (may be null) by blocks of 32 outputs and of rows; the result
/// does not depend on the thread count. Any M >= 1; a lone row (M == 1, or
/// the last of a block of rows) takes a matvec pass on AVX-512 VNNI and AMX,
/// as fast as qmatmul's matvec from the row layout.
///
/// Scratch: the prepared activations go to `scratch` (64-byte aligned, at
/// least qgemmScratchBytes(f, M, K, act) bytes): a prepared kernel passes
/// its queue's scratch, sized when it was prepared, so a call allocates
/// nothing. Null: a buffer owned by the calling thread (thread_local),
/// grown to the largest call (tests, benchmarks, callers without a queue).
void qgemm(const float *x, int64_t M, int64_t K, const uint8_t *w,
           GemmLayout layout, QuantFormat f, int64_t N, float *y,
           bool accumulate, fm::rt::ThreadPool *pool,
           QActivations act = QActivations::Int8x2, uint8_t *scratch = nullptr);

/// Bytes of scratch qgemm needs for M rows of K inputs (a multiple of 64;
/// 0 for QActivations::F32, which reads x as it is). Grows with M, so the
/// most rows a kernel runs sizes it.
size_t qgemmScratchBytes(QuantFormat f, int64_t M, int64_t K,
                         QActivations act);

/// qgemm split for callers that schedule its work across threads
/// themselves (the fused LoRA matmul of hal/cpu/CpuLora.cpp), on the best
/// path, each call single-threaded: qgemmPrepareRows prepares x rows
/// [m0, m1) of M (rows K floats apart) into `scratch` (qgemmScratchBytes
/// for M rows; the call with m0 == 0 also zeroes the padding rows), then,
/// once all M rows are prepared, qgemmColumns computes the columns [n0, n1)
/// (n0 a multiple of 16, n1 too or N) of all M rows of y, rows ldy apart,
/// from the Panel16 copy w.
void qgemmPrepareRows(const float *x, int64_t M, int64_t K, QuantFormat f,
                      QActivations act, uint8_t *scratch, int64_t m0,
                      int64_t m1);
void qgemmColumns(const float *x, int64_t M, int64_t K, const uint8_t *w,
                  QuantFormat f, int64_t N, float *y, int64_t ldy,
                  bool accumulate, QActivations act, const uint8_t *scratch,
                  int64_t n0, int64_t n1);

/// Whether the lone-row matvec of the AVX-512 VNNI and AMX paths takes its
/// tile rows out with GFNI (one vgf2p8affineqb each) on this CPU, rather
/// than by shift and mask.
bool qgemmMatvecUsesGfni();
/// For tests: allowed = false makes that matvec split tile rows by shift
/// and mask even where the CPU has GFNI (true, the default, restores it).
/// Process-wide: not while other threads run qgemm.
void qgemmAllowMatvecGfni(bool allowed);

/// qgemm on an explicit path, which must be available; for tests and
/// benchmarks.
void qgemmOn(GemmPath path, const float *x, int64_t M, int64_t K,
             const uint8_t *w, GemmLayout layout, QuantFormat f, int64_t N,
             float *y, bool accumulate, fm::rt::ThreadPool *pool,
             QActivations act, uint8_t *scratch = nullptr);

} // namespace fm::kernels
