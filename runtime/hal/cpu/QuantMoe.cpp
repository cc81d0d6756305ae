// kernels::moe over the runtime's weight handles: packed low-bit, f16 or f32
// experts (any mix), each matmul on the kernel of its weight's kind. The
// routing, scheduling and combine are kernels::moe's own.
#include "hal/cpu/QuantMoe.h"

#include <vector>

namespace fm::rt {
namespace {

void handleMatmul(const void *w, const float *x, int64_t M, int64_t K,
                  int64_t N, float *y, ThreadPool *pool) {
  linear(*static_cast<const WeightRef *>(w), x, M, K, N, y, false, pool);
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
  return kernels::moeScratchFloats(shape);
}

void quantMoe(const QuantMoeArgs &a, float *scratch, ThreadPool *pool) {
  // Per-expert handle tables, grown once per thread: no allocation per call
  // once warm.
  thread_local std::vector<const void *> handles;
  const int64_t E = a.shape.experts;
  if (handles.size() < size_t(3 * E))
    handles.resize(size_t(3 * E));
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
  m.gate = handles.data();
  m.up = handles.data() + E;
  m.down = handles.data() + 2 * E;
  m.sharedGate = &a.sharedGate;
  m.sharedUp = &a.sharedUp;
  m.sharedDown = &a.sharedDown;
  m.sharedExpertGate = &a.sharedExpertGate;
  m.ops = &kHandleOps;
  kernels::moe(m, scratch, pool);
}

} // namespace fm::rt
