// The MoE routing rule, in one place for every device: the CPU Moe kernel
// (moe.cpp), the CUDA device's host plan (hal/cuda/MoePlan.h) and its
// device-side routing (hal/cuda/kernels/moe.cu, which compiles this header
// as device code) must pick the same experts with the same weights in the
// same slot order, or their outputs differ in more than rounding. Plain
// C++ without the standard library's algorithms, so that it is device code
// too.
#pragma once

#include <cmath>
#include <stdint.h>

#if defined(__CUDACC__)
#define FM_MOE_FN __host__ __device__ inline
#else
#define FM_MOE_FN inline
#endif

namespace fm::kernels {

/// Routes `rows` rows of `experts` router logits (row-major): p = softmax(l)
/// in f32 (`probs` may be `logits`: it is computed in place then), then the
/// top `topK` of p, where only a strictly larger probability displaces, so
/// ties keep the lower expert; the weights are renormalized to sum to 1 only
/// when `normTopk`. Writes row r's choice j to choice[r·k + j] (the expert)
/// and weight[r·k + j], and counts each expert's rows in count[0..E). Scratch:
/// stamp [E] (the row that last chose e). Index is the caller's integer type
/// for its tables (int64_t on the CPU, int32_t for the GPU's).
template <class Index>
FM_MOE_FN void moeRoute(const float *logits, float *probs, int64_t rows, int64_t experts,
              int64_t topK, bool normTopk, Index *stamp, Index *count,
              Index *choice, float *weight) {
  const int64_t M = rows, E = experts, k = topK;
  for (int64_t e = 0; e < E; ++e) {
    stamp[e] = Index(-1);
    count[e] = Index(0);
  }
  for (int64_t r = 0; r < M; ++r) {
    const float *l = logits + r * E;
    float *p = probs + r * E;
    float mx = l[0];
    for (int64_t e = 1; e < E; ++e)
      mx = l[e] > mx ? l[e] : mx;
    float sum = 0.0f;
    for (int64_t e = 0; e < E; ++e)
      sum += (p[e] = expf(l[e] - mx));
    const float inv = 1.0f / sum;
    for (int64_t e = 0; e < E; ++e)
      p[e] *= inv;
    float kept = 0.0f;
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      for (int64_t e = 0; e < E; ++e)
        if (stamp[e] != Index(r) && (best < 0 || p[e] > p[best]))
          best = e;
      stamp[best] = Index(r);
      choice[r * k + j] = Index(best);
      weight[r * k + j] = p[best];
      kept += p[best];
      ++count[best];
    }
    if (normTopk)
      for (int64_t j = 0; j < k; ++j)
        weight[r * k + j] /= kept;
  }
}

/// The slots of moeRoute's choices: the (row, choice) pairs grouped by
/// expert, rows ascending within an expert. count [E + 1] holds the rows per
/// expert on entry and each expert's first slot on return (count[E] = M·k);
/// slotRow[s] is the row slot s gathers, rowSlot[r·k + j] the slot of row r's
/// choice j. Scratch: cursor [E].
template <class Index>
FM_MOE_FN void moeSlots(const Index *choice, int64_t rows, int64_t experts, int64_t topK,
              Index *count, Index *cursor, Index *slotRow, Index *rowSlot) {
  const int64_t M = rows, E = experts, k = topK;
  Index offset = 0;
  for (int64_t e = 0; e < E; ++e) {
    const Index n = count[e];
    count[e] = offset;
    cursor[e] = offset;
    offset += n;
  }
  count[E] = offset;
  for (int64_t r = 0; r < M; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const Index slot = cursor[choice[r * k + j]]++;
      slotRow[slot] = Index(r);
      rowSlot[r * k + j] = slot;
    }
}

} // namespace fm::kernels
