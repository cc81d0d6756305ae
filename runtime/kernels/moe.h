// Mixture of SwiGLU experts (Mixtral / Qwen2-MoE style) over rows of f32
// activations: router softmax, top-k, the experts on only their rows, and
// an optional sigmoid-gated shared expert.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::kernels {

/// The sizes a Moe call is planned for: what its scratch depends on.
struct MoeShape {
  int64_t rows = 0;         // M: rows of x and y
  int64_t hidden = 0;       // K: width of x and y
  int64_t experts = 0;      // E
  int64_t intermediate = 0; // I: SwiGLU width of one expert
  int64_t topK = 0;         // 1 <= topK <= experts
  int64_t sharedIntermediate = 0; // 0: no shared expert
  /// With MoeArgs::ops: bytes of scratch one ops->matmul call needs (for up
  /// to `rows` rows), and how many such calls may run at once (the experts
  /// run in parallel on up to this many threads); the scratch holds one
  /// region per thread, so a call allocates nothing. 0 bytes: the ops get
  /// null scratch.
  size_t opsScratchBytes = 0;
  int64_t threads = 1;
};

struct MoeArgs {
  MoeShape shape;
  /// Rows of x and y: row r at x + r * xStride (y + r * yStride); y must not
  /// overlap x or the scratch.
  const float *x = nullptr;
  int64_t xStride = 0;
  float *y = nullptr;
  int64_t yStride = 0;
  /// y += instead of y =.
  bool accumulate = false;
  /// Renormalize the kept top-k probabilities to sum 1.
  bool normTopk = true;
  /// Weights are IEEE binary16 bits (else f32), all of them.
  bool f16 = false;
  /// nn.Linear weights (out × in): router [E][K]; per expert e, gate[e] and
  /// up[e] [I][K] and down[e] [K][I]. When up[e] starts where gate[e] ends,
  /// the two run as one [2I][K] matmul.
  const void *router = nullptr;
  const void *const *gate = nullptr;
  const void *const *up = nullptr;
  const void *const *down = nullptr;
  /// The shared expert (shape.sharedIntermediate > 0): gate and up [Is][K],
  /// down [K][Is], and its gate [1][K]:
  /// y += sigmoid(x · sharedExpertGateᵀ) · shared(x).
  const void *sharedGate = nullptr, *sharedUp = nullptr;
  const void *sharedDown = nullptr, *sharedExpertGate = nullptr;
  /// How to multiply by weights that are not plain f32/f16 arrays (the
  /// runtime's packed low-bit weights, or a mix of kinds): when set, every
  /// weight pointer above is an opaque handle passed to these, and `f16` is
  /// ignored.
  const struct MoeWeightOps *ops = nullptr;
};

struct MoeWeightOps {
  /// y[M][N] = x[M][K] · wᵀ, with MoeShape::opsScratchBytes of `scratch`
  /// (64-byte aligned; null when that is 0) to itself.
  void (*matmul)(const void *w, const float *x, int64_t M, int64_t K,
                 int64_t N, float *y, fm::rt::ThreadPool *pool,
                 uint8_t *scratch);
  /// Whether `up` continues `gate` ([I][K] each) in memory, so that one
  /// matmul over `gate` with N = 2I covers both.
  bool (*stacked)(const void *gate, const void *up, int64_t I, int64_t K);
};

/// Floats of scratch that moe() needs for `shape` (64-byte aligned start);
/// part of it holds int64 routing tables.
size_t moeScratchFloats(const MoeShape &shape);

/// The most floats of scratch a Moe may ask for: more is a corrupt file, not
/// a model. The loader checks the part every device needs (one thread, no
/// ops scratch); a device whose experts take per-thread scratch checks its
/// whole amount, threads included, when the session prepares the kernel.
constexpr uint64_t kMoeMaxScratchFloats = uint64_t(1) << 44;

/// y (+)= Σ_{e in topk(p)} p_e · down_e(silu(gate_e(x)) · up_e(x)) per row,
/// p = softmax(x · routerᵀ) computed in f32, the top-k taken with the lower
/// expert index first on ties and renormalized when normTopk; then the
/// shared expert's gated output is added. Each expert runs once, on the rows
/// routed to it (gathered into a dense block), and an expert without rows
/// costs nothing. `scratch` holds moeScratchFloats(args.shape) floats. With
/// a pool of several threads the experts with work run in parallel when
/// there are at least as many as threads, else the matmuls are split; a null
/// pool runs on the calling thread.
void moe(const MoeArgs &args, float *scratch, fm::rt::ThreadPool *pool);

} // namespace fm::kernels
