// Row and element-wise kernels of the image encoders: LayerNorm with weight
// and bias, and the GELU family (erf, tanh, quick), on the runtime's
// instruction-set paths.
#pragma once

#include "kernels/isa.h"

#include <cstdint>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::kernels {

/// y[r] = (x[r] − mean) / sqrt(var + eps) · weight + bias over the C values
/// of each of `rows` rows (biased variance, two passes in f32). y may be x.
void layerNorm(const float *x, int64_t rows, int64_t C, const float *weight,
               const float *bias, float eps, float *y, fm::rt::ThreadPool *pool);

enum class Activation {
  Gelu,      ///< x·½(1 + erf(x/√2)), the exact GELU.
  GeluTanh,  ///< x·½(1 + tanh(√(2/π)(x + 0.044715x³))).
  QuickGelu, ///< x·σ(1.702x).
};

/// "gelu", "gelu_tanh" or "quick_gelu" (the config's hidden_act).
const char *activationName(Activation act);

/// x[i] = act(x[i]) for i < n, in place. Within 3e-7 · max(1, |x|) of the
/// exact function (erf by a rational approximation, e^x by ExpApprox).
void activate(Activation act, float *x, int64_t n, fm::rt::ThreadPool *pool);

/// layerNorm / activate on an explicit path, which must be available
/// (kernelIsaAvailable); Neon runs the generic source (NEON is baseline
/// there). For tests and benchmarks.
void layerNormOn(KernelIsa isa, const float *x, int64_t rows, int64_t C,
                 const float *weight, const float *bias, float eps, float *y,
                 fm::rt::ThreadPool *pool);
void activateOn(KernelIsa isa, Activation act, float *x, int64_t n,
                fm::rt::ThreadPool *pool);

} // namespace fm::kernels
