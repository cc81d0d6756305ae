// f32 matmul/matvec against nn.Linear weights (f32 or f16), with a runtime
// choice between the generic, AVX2, AVX-512 and NEON paths.
#pragma once

#include "kernels/isa.h"

#include <cstdint>
#include <cstring>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::kernels {

/// y[M][N] (+)= x[M][K] · w[N][K]ᵀ, all row-major; w is an nn.Linear weight
/// (out × in). With `accumulate` the products are added to y (a fused
/// residual add), otherwise y is overwritten. y must not overlap x or w.
/// M <= kMatvecMaxRows (isa.h) is the bandwidth-bound decode matvec, which
/// reads w once for all M rows and gives each row bit for bit the result
/// of a call with that row alone; more rows the prefill matmul.
/// `pool` may be null (single-threaded).
void matmulF32(const float *x, int64_t M, int64_t K, const float *w, int64_t N,
               float *y, bool accumulate, fm::rt::ThreadPool *pool);

/// As matmulF32, with w stored as IEEE binary16 bits, widened in registers.
void matmulF16W(const float *x, int64_t M, int64_t K, const uint16_t *w,
                int64_t N, float *y, bool accumulate, fm::rt::ThreadPool *pool);

/// One block of matmulF32 / matmulF16W on the calling thread, on the best
/// path: y[m][n] (+)= dot(x[m], w[n]) for m in [m0, m1), n in [n0, n1);
/// rows of x and w are K apart, rows of y ldy apart. For callers that split
/// a matmul across threads themselves (the fused LoRA matmul of
/// hal/cpu/CpuLora.cpp, which adds its side path in the same dispatch).
void matmulF32Block(const float *x, int64_t K, const float *w, float *y,
                    int64_t ldy, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                    bool accumulate);
void matmulF16WBlock(const float *x, int64_t K, const uint16_t *w, float *y,
                     int64_t ldy, int64_t m0, int64_t m1, int64_t n0,
                     int64_t n1, bool accumulate);

/// The instruction-set paths (see isa.h for which are compiled in and which
/// this CPU runs).
using MatmulPath = KernelIsa;

/// The name of the path that matmulF32/matmulF16W use, e.g. "avx512".
const char *matmulPathName();

/// matmulF32/matmulF16W on an explicit path, which must be available
/// (kernelIsaAvailable); for tests and benchmarks.
void matmulF32On(MatmulPath path, const float *x, int64_t M, int64_t K,
                 const float *w, int64_t N, float *y, bool accumulate,
                 fm::rt::ThreadPool *pool);
void matmulF16WOn(MatmulPath path, const float *x, int64_t M, int64_t K,
                  const uint16_t *w, int64_t N, float *y, bool accumulate,
                  fm::rt::ThreadPool *pool);

/// Exact IEEE binary16 -> binary32 conversion (subnormals, inf and NaN
/// included), branch-free so loops over it vectorize.
inline float halfToFloat(uint16_t h) {
  uint32_t magnitude = h & 0x7fffu;
  // Moving the 5-bit exponent and mantissa up by 13 makes a float that is
  // 2^-112 times the half's value (subnormal halves land on float
  // subnormals); multiplying by 2^112 rebases the exponent.
  uint32_t bits = magnitude << 13;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  f *= 0x1p112f;
  uint32_t scaled;
  std::memcpy(&scaled, &f, sizeof(scaled));
  // Inf and NaN keep their mantissa under an all-ones exponent.
  uint32_t special = bits | 0x7f800000u;
  uint32_t out = (magnitude >= 0x7c00u ? special : scaled) |
                 (static_cast<uint32_t>(h & 0x8000u) << 16);
  std::memcpy(&f, &out, sizeof(f));
  return f;
}

} // namespace fm::kernels
