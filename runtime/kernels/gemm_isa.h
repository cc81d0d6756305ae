// Internal: the per-instruction-set GEMM entry points that gemm.cpp
// dispatches to and splits across threads.
#pragma once

#include <cstdint>

namespace fm::kernels::detail {

/// One gemmF32 call.
struct GemmProblem {
  const float *x;
  int64_t M, K;
  const float *w;
  int64_t N;
  const float *bias;
  float *y;
  bool accumulate;
};

/// Computes the block y[m0, m1) x [n0, n1) of `p` on the calling thread,
/// packing into aPanel (GemmIsa::aFloats) and bPanel (bFloats).
using GemmBlockFn = void (*)(const GemmProblem &p, int64_t m0, int64_t m1,
                             int64_t n0, int64_t n1, float *aPanel,
                             float *bPanel);

struct GemmIsa {
  GemmBlockFn block;
  /// Register tile: rows of x, columns of w.
  int mr, nr;
  /// Floats of the two panel buffers a block call needs.
  int64_t aFloats, bFloats;
};

// Each is defined only where CMake compiles its file (FM_KERNELS_X86 /
// FM_KERNELS_NEON), and must only be called where the CPU supports it.
extern const GemmIsa kGemmGeneric;
extern const GemmIsa kGemmAvx2;
extern const GemmIsa kGemmAvx512;
extern const GemmIsa kGemmNeon;

} // namespace fm::kernels::detail
