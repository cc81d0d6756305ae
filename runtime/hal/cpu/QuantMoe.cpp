// kernels::moe over the runtime's weight handles: packed low-bit, f16 or f32
// experts (any mix), each matmul on the kernel of its weight's kind. The
// routing, scheduling and combine are kernels::moe's own.
#include "hal/cpu/QuantMoe.h"

#include <algorithm>
#include <cstdint>

namespace fm::rt {
namespace {

void handleMatmul(const void *w, const float *x, int64_t M, int64_t K,
                  int64_t N, float *y, ThreadPool *pool, uint8_t *scratch) {
  linear(*static_cast<const WeightRef *>(w), x, M, K, N, y, false, pool,
         scratch);
}

// The per-expert handle table at the front of the scratch: 3E pointers,
// rounded up to 16 floats.
size_t handleFloats(int64_t E) {
  const size_t bytes = size_t(3 * E) * sizeof(const void *);
  return (bytes / sizeof(float) + 15) / 16 * 16;
}

bool handleStacked(const void *gate, const void *up, int64_t I, int64_t K) {
  const auto &g = *static_cast<const WeightRef *>(gate);
  const auto &u = *static_cast<const WeightRef *>(up);
  return g.sameLayout(u) &&
         static_cast<const char *>(g.data) + size_t(I) * g.rowBytes(K) ==
             static_cast<const char *>(u.data);
}

const kernels::MoeWeightOps kHandleOps{handleMatmul, handleStacked};

} // namespace

size_t quantMoeScratchFloats(const kernels::MoeShape &shape) {
  const size_t moe = kernels::moeScratchFloats(shape);
  const size_t handles = handleFloats(std::max<int64_t>(0, shape.experts));
  return moe > SIZE_MAX - handles ? SIZE_MAX : moe + handles;
}

size_t quantMoeMatmulScratchBytes(const QuantMoeArgs &a) {
  const kernels::MoeShape &s = a.shape;
  const int64_t M = s.rows, K = s.hidden, I = s.intermediate;
  size_t bytes = linearScratchBytes(a.router, M, K);
  for (int64_t e = 0; e < s.experts; ++e)
    bytes = std::max({bytes, linearScratchBytes(a.gate[e], M, K),
                      linearScratchBytes(a.up[e], M, K),
                      linearScratchBytes(a.down[e], M, I)});
  if (s.sharedIntermediate > 0)
    bytes = std::max({bytes, linearScratchBytes(a.sharedGate, M, K),
                      linearScratchBytes(a.sharedUp, M, K),
                      linearScratchBytes(a.sharedDown, M, s.sharedIntermediate),
                      linearScratchBytes(a.sharedExpertGate, M, K)});
  return bytes;
}

void quantMoe(const QuantMoeArgs &a, float *scratch, ThreadPool *pool) {
  // The per-expert handle table, in the caller's scratch.
  const int64_t E = a.shape.experts;
  const void **handles = reinterpret_cast<const void **>(scratch);
  for (int64_t e = 0; e < E; ++e) {
    handles[e] = &a.gate[e];
    handles[E + e] = &a.up[e];
    handles[2 * E + e] = &a.down[e];
  }
  kernels::MoeArgs m;
  m.shape = a.shape;
  m.x = a.x;
  m.xStride = a.xStride;
  m.y = a.y;
  m.yStride = a.yStride;
  m.accumulate = a.accumulate;
  m.normTopk = a.normTopk;
  m.router = &a.router;
  m.gate = handles;
  m.up = handles + E;
  m.down = handles + 2 * E;
  m.sharedGate = &a.sharedGate;
  m.sharedUp = &a.sharedUp;
  m.sharedDown = &a.sharedDown;
  m.sharedExpertGate = &a.sharedExpertGate;
  m.ops = &kHandleOps;
  kernels::moe(m, scratch + handleFloats(E), pool);
}

} // namespace fm::rt
