// Internal: the per-instruction-set LoRA entry points that lora.cpp
// dispatches to and splits across threads.
#pragma once

#include "kernels/lora.h"

#include <cstdint>

namespace fm::kernels::detail {

/// t[m][i] = dot(x[m], a[i]) for m < M and rows i in [i0, i1) of a; t
/// points at column 0 of a's outputs (t[m][i] is t[m * ldt + i]).
/// Single-threaded.
using LoraDownRangeFn = void (*)(const float *x, int64_t M, int64_t ldx,
                                 const LoraMatrix &a, int64_t i0, int64_t i1,
                                 float *t, int64_t ldt);

/// y[m][n] += scale · Σ_i t[m][i] · bt[i][n] for m < M and columns n in
/// [n0, n1) of bt (n0 a multiple of 64). Single-threaded.
using LoraUpRangeFn = void (*)(const float *t, int64_t M, int64_t ldt,
                               const LoraMatrix &bt, int64_t n0, int64_t n1,
                               float scale, float *y, int64_t ldy);

struct LoraIsa {
  LoraDownRangeFn down;
  LoraUpRangeFn up;
};

// Each is defined only where CMake compiles its file (FM_KERNELS_X86), and
// must only be called where the CPU supports it.
extern const LoraIsa kLoraGeneric;
extern const LoraIsa kLoraAvx2;
extern const LoraIsa kLoraAvx512;

/// Columns of bt per unit of work: every range starts on a multiple.
inline constexpr int64_t kLoraUpUnit = 64;

} // namespace fm::kernels::detail
