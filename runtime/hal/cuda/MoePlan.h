// The CUDA MoE kernel's routing on the host (CudaMoe.cpp): the router's
// logits come back from the GPU, and the plan routes them with the CPU
// Moe's own code (kernels/moe_route.h: softmax in f32, the top k with ties
// to the lower expert, renormalized when normTopk; the slots grouped by
// expert, rows ascending) into the int32 tables the kernels read. Plain
// C++, shared with its unit test (test/unit/cuda/moe_test.cpp).
#pragma once

#include "kernels/moe_route.h"

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
  /// The routing's scratch: probabilities [M][E], stamp and cursor [E].
  std::vector<float> probs;
  std::vector<int32_t> stamp, cursor;
};

/// The plan for `rows` rows of `experts` router logits (row-major).
inline void planMoe(const float *logits, int64_t rows, int64_t experts,
                    int64_t topK, bool normTopk, MoePlan &plan) {
  const size_t M = size_t(rows), E = size_t(experts), k = size_t(topK);
  plan.first.assign(E + 1, 0);
  plan.slotRow.assign(M * k, 0);
  plan.rowSlot.assign(M * k, 0);
  plan.rowWeight.assign(M * k, 0.0f);
  plan.choice.assign(M * k, 0);
  plan.probs.resize(M * E);
  plan.stamp.resize(E);
  plan.cursor.resize(E);
  kernels::moeRoute(logits, plan.probs.data(), rows, experts, topK, normTopk,
                    plan.stamp.data(), plan.first.data(), plan.choice.data(),
                    plan.rowWeight.data());
  kernels::moeSlots(plan.choice.data(), rows, experts, topK, plan.first.data(),
                    plan.cursor.data(), plan.slotRow.data(),
                    plan.rowSlot.data());
}

} // namespace fm::hal::cuda
