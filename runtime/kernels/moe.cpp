// The mixture-of-experts kernel: routing, per-expert gathered SwiGLU on the
// matmul kernels, a fixed-order weighted combine, and the shared expert.
#include "kernels/moe.h"

#include "kernels/matmul.h"
#include "kernels/moe_route.h"
#include "base/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

namespace fm::kernels {
namespace {

// Scratch regions start on 64-byte boundaries.
constexpr size_t kAlignFloats = 16;

size_t satAdd(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
size_t satMul(size_t a, size_t b) {
  return a != 0 && b > SIZE_MAX / a ? SIZE_MAX : a * b;
}
size_t region(size_t floats) {
  return floats > SIZE_MAX - kAlignFloats ? SIZE_MAX
                                          : (floats + kAlignFloats - 1) &
                                                ~(kAlignFloats - 1);
}

// Where each part of the scratch lies, for one shape. The same walk sizes
// the scratch (base null) and carves it.
struct Layout {
  float *xDense = nullptr;   // [M][K]: x rows made dense (when strided)
  float *probs = nullptr;    // [M][E]: router logits, then probabilities
  int64_t *stamp = nullptr;  // [E]: row that last chose expert e
  int64_t *count = nullptr;  // [E + 1]: rows per expert, then slot offsets
  int64_t *active = nullptr; // [E]: experts with rows, most rows first
  int64_t *choice = nullptr; // [M * k]: expert of choice j of row r
  int64_t *rowSlot = nullptr; // [M * k]: slot of choice j of row r
  int64_t *slotRow = nullptr; // [M * k]: row of slot s (slots by expert)
  float *choiceW = nullptr;  // [M * k]: weight of choice j of row r
  float *rows = nullptr;     // [M * k][K]: gathered x, then the expert output
  float *hidden = nullptr;   // [M * k][2I] (or [M][2Is]): gate|up, then act
  float *sharedLogit = nullptr; // [M]
  uint8_t *opsScratch = nullptr; // [threads][opsSlot]: the ops' matmuls
  size_t opsSlot = 0;            // bytes per thread (a multiple of 64)
  size_t floats = 0;

  Layout(const MoeShape &s, float *base) {
    const size_t M = size_t(s.rows), K = size_t(s.hidden), E = size_t(s.experts),
                 k = size_t(s.topK), I = size_t(s.intermediate),
                 Is = size_t(s.sharedIntermediate);
    auto take = [&](size_t n) {
      float *p = base ? base + floats : nullptr;
      floats = satAdd(floats, region(n));
      return p;
    };
    auto takeInts = [&](size_t n) {
      return reinterpret_cast<int64_t *>(take(satMul(n, 2)));
    };
    xDense = take(satMul(M, K));
    probs = take(satMul(M, E));
    stamp = takeInts(E);
    count = takeInts(satAdd(E, 1));
    active = takeInts(E);
    choice = takeInts(satMul(M, k));
    rowSlot = takeInts(satMul(M, k));
    slotRow = takeInts(satMul(M, k));
    choiceW = take(satMul(M, k));
    rows = take(std::max(satMul(satMul(M, k), K), satMul(M, K)));
    hidden = take(std::max(satMul(satMul(M, k), satMul(2, I)),
                           satMul(M, satMul(2, Is))));
    sharedLogit = take(M);
    opsSlot = satMul(region(satAdd(s.opsScratchBytes, 3) / 4), sizeof(float));
    const size_t lanes = size_t(std::max<int64_t>(1, s.threads));
    if (s.opsScratchBytes > 0)
      opsScratch = reinterpret_cast<uint8_t *>(
          take(satMul(lanes, opsSlot / sizeof(float))));
  }
  /// Thread t's region of the ops' scratch (null without one).
  uint8_t *opsScratchOf(int64_t t) const {
    return opsScratch ? opsScratch + size_t(t) * opsSlot : nullptr;
  }
};

// y = x · wᵀ on the weight's storage: f32, f16, or the caller's ops.
void linear(const MoeArgs &a, const float *x, int64_t M, int64_t K,
            const void *w, int64_t N, float *y, fm::rt::ThreadPool *pool,
            uint8_t *scratch) {
  if (a.ops)
    a.ops->matmul(w, x, M, K, N, y, pool, scratch);
  else if (a.f16)
    matmulF16W(x, M, K, static_cast<const uint16_t *>(w), N, y, false, pool);
  else
    matmulF32(x, M, K, static_cast<const float *>(w), N, y, false, pool);
}

bool stackedWeights(const MoeArgs &a, const void *gate, const void *up,
                    int64_t I, int64_t K) {
  if (a.ops)
    return a.ops->stacked(gate, up, I, K);
  const size_t elem = a.f16 ? 2 : 4;
  return static_cast<const char *>(gate) + size_t(I) * K * elem ==
         static_cast<const char *>(up);
}

inline float silu(float v) { return v / (1.0f + std::exp(-v)); }

// The SwiGLU of `n` dense rows `x` [n][K] into `out` [n][K], through
// `hidden` ([n][2I]). Gate and up run as one matmul when up follows gate in
// memory; the activation is then compacted in place to [n][I].
void swiglu(const MoeArgs &a, const float *x, int64_t n, int64_t K,
            const void *gate, const void *up, const void *down, int64_t I,
            float *hidden, float *out, fm::rt::ThreadPool *pool,
            uint8_t *scratch) {
  if (stackedWeights(a, gate, up, I, K)) {
    linear(a, x, n, K, gate, 2 * I, hidden, pool, scratch);
    // Row i of the activation goes to hidden + i*I, at or before where row
    // i of gate|up starts (i*2I): rows are compacted front to back.
    for (int64_t i = 0; i < n; ++i) {
      const float *g = hidden + i * 2 * I;
      const float *u = g + I;
      float *act = hidden + i * I;
      for (int64_t c = 0; c < I; ++c)
        act[c] = silu(g[c]) * u[c];
    }
  } else {
    float *g = hidden, *u = hidden + n * I;
    linear(a, x, n, K, gate, I, g, pool, scratch);
    linear(a, x, n, K, up, I, u, pool, scratch);
    for (int64_t i = 0; i < n * I; ++i)
      g[i] = silu(g[i]) * u[i];
  }
  linear(a, hidden, n, I, down, K, out, pool, scratch);
}

} // namespace

size_t moeScratchFloats(const MoeShape &shape) {
  return Layout(shape, nullptr).floats;
}

void moe(const MoeArgs &a, float *scratch, fm::rt::ThreadPool *pool) {
  const MoeShape &s = a.shape;
  const int64_t M = s.rows, K = s.hidden, E = s.experts, k = s.topK,
                I = s.intermediate;
  if (M <= 0 || K <= 0 || E <= 0 || k <= 0 || k > E)
    return;
  Layout L(s, scratch);

  // Dense x for the matmuls.
  const float *x = a.x;
  if (M > 1 && a.xStride != K) {
    for (int64_t r = 0; r < M; ++r)
      std::memcpy(L.xDense + r * K, a.x + r * a.xStride, K * sizeof(float));
    x = L.xDense;
  }

  // Routing (moe_route.h): softmax in f32, the top k, ties to the lower
  // expert; the probabilities replace the logits in place.
  linear(a, x, M, K, a.router, E, L.probs, pool, L.opsScratchOf(0));
  moeRoute(L.probs, L.probs, M, E, k, a.normTopk, L.stamp, L.count, L.choice,
           L.choiceW);

  // Slots: the (row, choice) pairs grouped by expert, rows ascending.
  int64_t numActive = 0;
  for (int64_t e = 0; e < E; ++e)
    if (L.count[e] > 0)
      L.active[numActive++] = e;
  // Largest experts first, so that the dynamic schedule below balances
  // (an insertion sort: stable, and it allocates nothing).
  for (int64_t i = 1; i < numActive; ++i) {
    const int64_t e = L.active[i];
    int64_t j = i;
    for (; j > 0 && L.count[L.active[j - 1]] < L.count[e]; --j)
      L.active[j] = L.active[j - 1];
    L.active[j] = e;
  }
  // count[e] becomes the first slot of e; stamp is the fill cursor.
  moeSlots(L.choice, M, E, k, L.count, L.stamp, L.slotRow, L.rowSlot);

  // Each expert on its rows: gather, SwiGLU, output into its own slots
  // (over the gathered rows, which the down matmul no longer needs).
  auto runExpert = [&](int64_t e, fm::rt::ThreadPool *p,
                       uint8_t *opsScratch) {
    const int64_t first = L.count[e], n = L.count[e + 1] - first;
    float *rows = L.rows + first * K;
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(rows + i * K, x + L.slotRow[first + i] * K,
                  K * sizeof(float));
    swiglu(a, rows, n, K, a.gate[e], a.up[e], a.down[e], I,
           L.hidden + first * 2 * I, rows, p, opsScratch);
  };
  const int threads = pool ? pool->numThreads() : 1;
  // With ops scratch, as many experts at once as it has regions.
  const int64_t lanes =
      a.ops && L.opsScratch
          ? std::min<int64_t>(threads, std::max<int64_t>(1, s.threads))
          : threads;
  if (lanes > 1 && numActive >= lanes) {
    std::atomic<int64_t> next{0};
    // Chunk t of [0, lanes) is [t, t + 1): thread t's region.
    pool->parallelFor(lanes, [&](int64_t t, int64_t) {
      for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) <
                      numActive;)
        runExpert(L.active[i], nullptr, L.opsScratchOf(t));
    });
  } else {
    for (int64_t i = 0; i < numActive; ++i)
      runExpert(L.active[i], pool, L.opsScratchOf(0));
  }

  // y (+)= Σ_j w_j · out[slot_j], choices in rank order.
  auto combine = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float *y = a.y + r * a.yStride;
      if (!a.accumulate)
        std::fill(y, y + K, 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        const float w = L.choiceW[r * k + j];
        const float *o = L.rows + L.rowSlot[r * k + j] * K;
        for (int64_t c = 0; c < K; ++c)
          y[c] += w * o[c];
      }
    }
  };
  if (threads > 1 && M > 1 && M * K * k >= (1 << 15))
    pool->parallelFor(M, combine);
  else
    combine(0, M);

  // The shared expert, on every row, gated by sigmoid(x · gᵀ).
  const int64_t Is = s.sharedIntermediate;
  if (Is <= 0)
    return;
  linear(a, x, M, K, a.sharedExpertGate, 1, L.sharedLogit, pool,
         L.opsScratchOf(0));
  swiglu(a, x, M, K, a.sharedGate, a.sharedUp, a.sharedDown, Is, L.hidden,
         L.rows, pool, L.opsScratchOf(0));
  for (int64_t r = 0; r < M; ++r) {
    const float g = 1.0f / (1.0f + std::exp(-L.sharedLogit[r]));
    float *y = a.y + r * a.yStride;
    const float *o = L.rows + r * K;
    for (int64_t c = 0; c < K; ++c)
      y[c] += g * o[c];
  }
}

} // namespace fm::kernels
