// Matmul/matvec against packed low-bit nn.Linear weights (qformat.h), with
// the dequantization fused into the dot products, and a runtime choice
// between the generic, AVX2, AVX-512 (VNNI) and NEON paths.
#pragma once

#include "kernels/isa.h"
#include "kernels/qformat.h"

#include <cstddef>
#include <cstdint>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::kernels {

/// How the SIMD paths take the activations x (the weights are exact
/// either way; the generic path always keeps f32 x and is the reference).
enum class QActivations : uint8_t {
  /// x quantized once per call, per block of min(group, 64) inputs, to two
  /// int8 digits: x ~= (a / 256) * (256 * q0 + q1) with a = max|x| / 127,
  /// so |error| <= a / 512 (~16-bit x). Two integer dots (vpdpbusd, sdot,
  /// vpmaddubsw) per unpacked weight vector. The default: at 2 bits the
  /// matvec stays memory-bound (bench/kernels: within a few % of Int8), and
  /// logits match f32 x to ~1e-4.
  Int8x2,
  /// One int8 digit per input (like ggml's Q8): |error| <= a / 2, ~0.6% rms
  /// of y for normal x (~1.5% with 30x outlier channels); one dot per
  /// weight vector. Faster only where the kernel is compute-bound.
  Int8,
  /// f32 x: the AVX-512 kernel that decodes weights to f32 where the CPU
  /// has AVX-512, else the generic path; no activation rounding, 3-4x
  /// slower than the integer paths.
  F32,
  /// For the prefill GEMM (qgemm): x rounded per block to 11-bit integers,
  /// carried as two int8 digits, x ~= (a / 8) * (8 * q0 + q1) with
  /// q1 in [-4, 4], so |error| <= a / 16 (8x finer than Int8); for 2-bit
  /// weights to 13-bit ones, (a / 32) * (32 * q0 + q1), q1 in [-16, 16]
  /// (gdetail::int11Shift), per block of 32 inputs. On AMX, balanced
  /// group-32 weights at 2 or 4 bits and group-64 ones at 2 (w4 g32, w2
  /// g32, w2 g64) take a block's both digits in one K = 64 tile against
  /// [8 w; w] or [32 w; w]: Int8's speed, where Int8x2 runs twice the tile
  /// products. Other paths compute it as Int8x2 does
  /// (two dots), no faster. The matvec (qmatmul, decode: memory-bound)
  /// has no 11-bit rounding and runs Int8x2 for it.
  Int11,
  /// A session's --activations int11: Int11 for the GEMMs that qgemm's
  /// path takes in one tile per group (gemmTakesInt11InOneTile), Int8x2
  /// for every other GEMM (where Int11 is no faster) and for the matvec;
  /// resolved per call from the format and path.
  Int11Fast,
};

/// The name of `a`: "int8x2", "int8", "f32", "int11" or "int11-fast".
const char *qActivationsName(QActivations a);

/// y[M][N] (+)= x[M][K] · dequant(w)ᵀ, where w holds N packed rows of K
/// inputs (packedRowBytes(f, K) bytes each, an nn.Linear weight, out × in).
/// With `accumulate` the products are added to y, otherwise y is
/// overwritten. y must not overlap x or w. K must be a multiple of f.group.
/// M <= kMatvecMaxRows (isa.h) is the bandwidth-bound decode matvec (split
/// across threads by output rows), which unpacks each weight tile once for
/// all M rows and gives each row bit for bit the result of a call with that
/// row alone; more rows the prefill matmul. `pool` may be null. `act`
/// chooses how x enters the integer dot products (QActivations).
///
/// Scratch: the prepared activations go to `scratch` (64-byte aligned,
/// qmatmulScratchBytes(f, M, K, act) bytes; pool workers only read it): a
/// prepared kernel passes its queue's scratch, so a call allocates nothing.
/// Null: a buffer owned by the calling thread (thread_local), grown to the
/// largest M * K seen and then reused.
void qmatmul(const float *x, int64_t M, int64_t K, const uint8_t *w,
             QuantFormat f, int64_t N, float *y, bool accumulate,
             fm::rt::ThreadPool *pool, QActivations act = QActivations::Int8x2,
             uint8_t *scratch = nullptr);

/// Bytes of scratch qmatmul (the best path) needs for M rows of K inputs
/// with `act` (0 where the path reads x as it is).
size_t qmatmulScratchBytes(QuantFormat f, int64_t M, int64_t K,
                           QActivations act);

/// qmatmul split for callers that schedule its work across threads
/// themselves (the fused LoRA matmul of hal/cpu/CpuLora.cpp), on the best
/// path, each call single-threaded: qmatmulPrepareRows prepares x rows
/// [m0, m1) (rows K floats apart) into `prepared` (qmatmulScratchBytes for
/// all the rows; row m at m * qmatmulPreparedRowBytes), then, once every row
/// a block reads is prepared, qmatmulBlock computes y[m][n] (+)= x[m] ·
/// dequant(w[n]) for m in [m0, m1), n in [n0, n1), rows of y ldy apart.
/// Where the path reads f32 x (qmatmulPreparedRowBytes == 0) preparing does
/// nothing and the block reads x.
int64_t qmatmulPreparedRowBytes(QuantFormat f, int64_t K, QActivations act);
void qmatmulPrepareRows(const float *x, int64_t K, QuantFormat f,
                        QActivations act, uint8_t *prepared, int64_t m0,
                        int64_t m1);
void qmatmulBlock(const float *x, const uint8_t *prepared, int64_t K,
                  const uint8_t *w, QuantFormat f, float *y, int64_t ldy,
                  bool accumulate, QActivations act, int64_t m0, int64_t m1,
                  int64_t n0, int64_t n1);

/// The name of the path qmatmul uses, e.g. "avx512", or "avx512-gfni"
/// where the AVX-512 VNNI kernel takes its 2- and 4-bit planes out of the
/// weight bytes with GFNI's vgf2p8affineqb (one instruction, against a
/// shift and a mask).
const char *qmatmulPathName();

/// Whether this CPU runs the AVX-512 VNNI kernel with GFNI planes, and so
/// has the shift-and-mask one beside it to compare against.
bool qmatmulAvx512ShiftMaskAvailable();

/// qmatmulOn(KernelIsa::Avx512, act, ...) with the planes split by shift
/// and mask, as on a CPU without GFNI (act Int8x2 or Int8); only where
/// qmatmulAvx512ShiftMaskAvailable(). For tests (the two agree bit for bit)
/// and benchmarks (the baseline beside the GFNI kernel).
void qmatmulAvx512ShiftMaskOn(QActivations act, const float *x, int64_t M,
                              int64_t K, const uint8_t *w, QuantFormat f,
                              int64_t N, float *y, bool accumulate,
                              fm::rt::ThreadPool *pool);

/// qmatmul on an explicit path, which must be available
/// (kernelIsaAvailable); for tests and benchmarks. Avx512 takes vpdpbusd
/// where the CPU has AVX512-VNNI and otherwise runs the AVX2 kernels.
/// QActivations::F32 runs the AVX-512 f32 kernel on the Avx512 path and
/// the generic one on the others.
void qmatmulOn(KernelIsa path, QActivations act, const float *x, int64_t M,
               int64_t K, const uint8_t *w, QuantFormat f, int64_t N, float *y,
               bool accumulate, fm::rt::ThreadPool *pool,
               uint8_t *scratch = nullptr);

} // namespace fm::kernels
