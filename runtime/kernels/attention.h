// Causal grouped-query attention of new query rows over a KV cache (f32 or
// int8), with optional sliding window.
#pragma once

#include "kernels/isa.h"

#include <cstdint>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::kernels {

struct AttentionArgs {
  /// [S][H * D]: query rows of positions pos0 .. pos0 + S - 1.
  const float *q = nullptr;
  int64_t S = 0;
  int64_t pos0 = 0;
  /// Query heads, key/value heads (H % KVH == 0) and head size.
  int64_t H = 0, KVH = 0, D = 0;
  /// Multiplies q·k before the softmax (usually 1/sqrt(D)).
  float scale = 1.0f;
  /// 0: global attention. Otherwise the query at position i sees the keys j
  /// with i - window < j <= i.
  int64_t window = 0;
  /// Cache rows [capacity][KVH * D]: row j holds position j, and rows
  /// 0 .. pos0 + S - 1 must be filled (the S new rows included).
  const void *k = nullptr, *v = nullptr;
  int64_t capacity = 0;
  /// Cache element type: float, or int8 meaning value * kScale (vScale).
  bool int8 = false;
  float kScale = 1.0f, vScale = 1.0f;
  /// [S][H * D]; must not overlap q, k or v.
  float *out = nullptr;
};

/// out[s][h] = softmax_j(scale · q[s][h] · k[j][g]) · v[j][g] over the
/// visible positions j, with g = h / (H / KVH). The softmax is computed in
/// f32 with a running maximum (blocks of keys, no scratch beyond the
/// stack). Work is split across `pool` (may be null) by (s, h) pairs.
void attention(const AttentionArgs &args, fm::rt::ThreadPool *pool);

/// attention() on an explicit instruction-set path, which must be available
/// (kernelIsaAvailable); Neon runs the generic source, NEON being baseline on
/// AArch64. For tests and benchmarks.
void attentionOn(KernelIsa isa, const AttentionArgs &args,
                 fm::rt::ThreadPool *pool);

} // namespace fm::kernels
