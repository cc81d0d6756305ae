// Internal: the per-instruction-set attention entry points that
// attention.cpp and attention_flash.cpp dispatch to, and what they share.
#pragma once

#include "kernels/attention.h"

#include <cstdint>

namespace fm::kernels::detail {

/// Work items [begin, end): the S * H (row, head) pairs of attention
/// (AttentionKernel::range), or the (query block, KV head) pairs of the
/// blocked attention (FlashAttention::range).
using AttentionRangeFn = void (*)(const AttentionArgs &args, int64_t begin,
                                  int64_t end);

/// What attentionOn and attentionBlockedOn share (attention.cpp): checks
/// `a` (asserts), and runs range(a, ...) over `items` work items, split
/// across `pool` when the call's multiply-adds make it worth it.
void runAttentionItems(const AttentionArgs &a, int64_t items,
                       AttentionRangeFn range, fm::rt::ThreadPool *pool);

/// The path attention() and attentionBlocked() take: the best, but the
/// generic source on NEON (compiled with NEON as its baseline).
KernelIsa attentionIsaBest();

// Defined where CMake compiles attention_avx2.cpp / attention_avx512.cpp
// (FM_KERNELS_X86); callable only where the CPU supports them.
void attentionRangeAvx2(const AttentionArgs &args, int64_t begin, int64_t end);
void attentionRangeAvx512(const AttentionArgs &args, int64_t begin,
                          int64_t end);

} // namespace fm::kernels::detail
