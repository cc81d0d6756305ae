// Matmul/matvec against packed low-bit nn.Linear weights (qformat.h), with
// the dequantization fused into the dot products, and a runtime choice
// between the generic, AVX2, AVX-512 (VNNI) and NEON paths.
#pragma once

#include "kernels/isa.h"
#include "kernels/qformat.h"

#include <cstdint>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::kernels {

/// y[M][N] (+)= x[M][K] · dequant(w)ᵀ, where w holds N packed rows of K
/// inputs (packedRowBytes(f, K) bytes each, an nn.Linear weight, out × in).
/// With `accumulate` the products are added to y, otherwise y is
/// overwritten. y must not overlap x or w. K must be a multiple of f.group.
/// M == 1 is the bandwidth-bound decode matvec (split across threads by
/// output rows); M > 1 the prefill matmul. `pool` may be null.
///
/// The SIMD paths quantize x to int8 once per call, per block of
/// min(group, 64) inputs with an f32 scale (like ggml's Q8), and take
/// integer dot products (AVX-512 VNNI vpdpbusd, AVX2 vpmaddubsw, NEON
/// sdot/smull): |error| <= sum_k |w_k| * scale_k / 2 against exact f32
/// activations; for normal x that is ~0.6% rms of y (~1.5% with 30x outlier
/// channels), against 34% / 9% rms weight error at 2 / 4 bits. The generic
/// path keeps f32 activations and is the reference.
///
/// Scratch: the quantized activations go to a buffer owned by the calling
/// thread (thread_local), grown to the largest M * K seen and then reused:
/// no allocation per call once warm. Pool workers only read it.
void qmatmul(const float *x, int64_t M, int64_t K, const uint8_t *w,
             QuantFormat f, int64_t N, float *y, bool accumulate,
             fm::rt::ThreadPool *pool);

/// The name of the path qmatmul uses, e.g. "avx512".
const char *qmatmulPathName();

/// qmatmul on an explicit path, which must be available
/// (kernelIsaAvailable); for tests and benchmarks. Avx512 takes vpdpbusd
/// where the CPU has AVX512-VNNI and otherwise runs the AVX2 kernels.
void qmatmulOn(KernelIsa path, const float *x, int64_t M, int64_t K,
               const uint8_t *w, QuantFormat f, int64_t N, float *y,
               bool accumulate, fm::rt::ThreadPool *pool);

/// Kernel variants beyond the per-ISA default, for tests and benchmarks.
enum class QMatmulVariant {
  /// What qmatmulOn picks for the path.
  Default,
  /// AVX-512 decode of the weights to f32 against f32 activations: no
  /// activation rounding, 3-4x slower than vpdpbusd (kept as the measured
  /// alternative; see qmatmul_bench).
  Avx512F32,
};

/// Whether `variant` runs on this CPU.
bool qmatmulVariantAvailable(QMatmulVariant variant);

/// qmatmul with `variant` (which must be available).
void qmatmulVariant(QMatmulVariant variant, const float *x, int64_t M,
                    int64_t K, const uint8_t *w, QuantFormat f, int64_t N,
                    float *y, bool accumulate, fm::rt::ThreadPool *pool);

} // namespace fm::kernels
