// Internal: the per-instruction-set matmul entry points that matmul.cpp
// dispatches to and splits across threads.
#pragma once

#include <cstdint>

namespace fm::kernels::detail {

/// Computes y[m][n] (+)= dot(x[m][0..K), w[n][0..K)) for m in [m0, m1) and
/// n in [n0, n1); rows of x and w are K apart, rows of y are ldy apart.
/// Single-threaded; the caller sizes the block for the caches (a block of
/// w rows is reused across all rows of x in the block).
template <typename W>
using MatmulRangeFn = void (*)(const float *x, int64_t K, const W *w, float *y,
                               int64_t ldy, int64_t m0, int64_t m1, int64_t n0,
                               int64_t n1, bool accumulate);

struct MatmulIsa {
  MatmulRangeFn<float> f32;
  MatmulRangeFn<uint16_t> f16;
};

// Each is defined only where CMake compiles its file (FM_KERNELS_X86 /
// FM_KERNELS_NEON), and must only be called where the CPU supports it.
extern const MatmulIsa kMatmulGeneric;
extern const MatmulIsa kMatmulAvx2;
extern const MatmulIsa kMatmulAvx512;
extern const MatmulIsa kMatmulNeon;

} // namespace fm::kernels::detail
