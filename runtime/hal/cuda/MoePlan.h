// The CUDA MoE kernel's routing on the host (CudaMoe.cpp): the router's
// logits come back from the GPU, and this computes what the CPU's Moe
// (runtime/kernels/moe.cpp) computes from them: softmax in f32, the top k
// (a strictly larger probability displaces, so ties keep the lower expert),
// renormalized when normTopk; then the slots, the (row, choice) pairs
// grouped by expert with rows ascending. Plain C++, shared with its unit
// test (test/unit/cuda/moe_plan_test.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace fm::hal::cuda {

struct MoePlan {
  /// first[e] .. first[e + 1]: expert e's slots (E + 1 entries).
  std::vector<int32_t> first;
  /// The row of x each slot gathers (M·k entries).
  std::vector<int32_t> slotRow;
  /// Row r's choice j: its slot and its weight (M·k entries each, rank
  /// order).
  std::vector<int32_t> rowSlot;
  std::vector<float> rowWeight;
  /// Row r's choice j: the expert (M·k entries).
  std::vector<int32_t> choice;
};

/// The plan for `rows` rows of `experts` router logits (row-major).
inline void planMoe(const float *logits, int64_t rows, int64_t experts,
                    int64_t topK, bool normTopk, MoePlan &plan) {
  const int64_t M = rows, E = experts, k = topK;
  plan.first.assign(size_t(E + 1), 0);
  plan.slotRow.assign(size_t(M * k), 0);
  plan.rowSlot.assign(size_t(M * k), 0);
  plan.rowWeight.assign(size_t(M * k), 0.0f);
  plan.choice.assign(size_t(M * k), 0);
  std::vector<float> p(static_cast<size_t>(E));
  std::vector<int64_t> stamp(size_t(E), -1), count(size_t(E), 0);
  for (int64_t r = 0; r < M; ++r) {
    const float *l = logits + r * E;
    float mx = l[0];
    for (int64_t e = 1; e < E; ++e)
      mx = std::max(mx, l[e]);
    float sum = 0.0f;
    for (int64_t e = 0; e < E; ++e)
      sum += (p[e] = std::exp(l[e] - mx));
    const float inv = 1.0f / sum;
    for (int64_t e = 0; e < E; ++e)
      p[e] *= inv;
    float kept = 0.0f;
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      for (int64_t e = 0; e < E; ++e)
        if (stamp[e] != r && (best < 0 || p[e] > p[best]))
          best = e;
      stamp[best] = r;
      plan.choice[r * k + j] = int32_t(best);
      plan.rowWeight[r * k + j] = p[best];
      kept += p[best];
      ++count[best];
    }
    if (normTopk)
      for (int64_t j = 0; j < k; ++j)
        plan.rowWeight[r * k + j] /= kept;
  }
  std::vector<int64_t> cursor(static_cast<size_t>(E));
  int64_t offset = 0;
  for (int64_t e = 0; e < E; ++e) {
    plan.first[e] = int32_t(offset);
    cursor[e] = offset;
    offset += count[e];
  }
  plan.first[E] = int32_t(offset);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t slot = cursor[plan.choice[r * k + j]]++;
      plan.slotRow[slot] = int32_t(r);
      plan.rowSlot[r * k + j] = int32_t(slot);
    }
}

} // namespace fm::hal::cuda
