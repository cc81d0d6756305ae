// The mixture of SwiGLU experts of kernels/moe.h for experts stored in the
// packed low-bit formats (or any mix of f32, f16 and packed weights): the
// same routing and combine, each matmul on the kernel of its weight's kind.
#pragma once

#include "hal/cpu/Linear.h"
#include "kernels/moe.h"

#include <cstddef>
#include <cstdint>

namespace fm::rt {

class ThreadPool;

/// kernels::MoeArgs with a kind per weight. Everything else, the contract
/// included, is kernels::moe's.
struct QuantMoeArgs {
  kernels::MoeShape shape;
  const float *x = nullptr;
  int64_t xStride = 0;
  float *y = nullptr;
  int64_t yStride = 0;
  bool accumulate = false;
  bool normTopk = true;
  /// router [E][K]; per expert e, gate[e] and up[e] [I][K], down[e] [K][I].
  /// When up[e] starts where gate[e] ends (same kind), the two run as one
  /// [2I][K] matmul.
  WeightRef router;
  const WeightRef *gate = nullptr;
  const WeightRef *up = nullptr;
  const WeightRef *down = nullptr;
  /// shape.sharedIntermediate > 0: the shared expert and its gate [1][K].
  WeightRef sharedGate, sharedUp, sharedDown, sharedExpertGate;
};

/// Floats of scratch (64-byte aligned start) that quantMoe needs for
/// `shape`; saturates instead of overflowing. With shape.opsScratchBytes
/// (quantMoeMatmulScratchBytes) and shape.threads the experts' packed
/// matmuls get their scratch from it, so that a call allocates nothing;
/// with 0 they use the kernels' thread-local buffers (tests).
size_t quantMoeScratchFloats(const kernels::MoeShape &shape);

/// The most scratch one of a's matmuls needs for up to shape.rows rows:
/// what MoeShape::opsScratchBytes should be.
size_t quantMoeMatmulScratchBytes(const QuantMoeArgs &a);

/// y (+)= the Moe of x, as kernels::moe defines it: router softmax in f32,
/// top-k with the lower index first on ties (renormalized when normTopk),
/// each expert once on its gathered rows, a fixed-order combine, then the
/// sigmoid-gated shared expert. With routing on f32 weights the expert
/// choices are those of kernels::moe on the same router. `pool` may be
/// null; with several threads the experts run in parallel when there are at
/// least as many with rows as threads, else the matmuls are split.
void quantMoe(const QuantMoeArgs &args, float *scratch, ThreadPool *pool);

} // namespace fm::rt
