// Internal: the per-instruction-set attention entry points that
// attention.cpp dispatches to.
#pragma once

#include "kernels/attention.h"

#include <cstdint>

namespace fm::kernels::detail {

/// Work items [begin, end) of S * H (see AttentionKernel::range).
using AttentionRangeFn = void (*)(const AttentionArgs &args, int64_t begin,
                                  int64_t end);

// Defined where CMake compiles attention_avx2.cpp / attention_avx512.cpp
// (FM_KERNELS_X86); callable only where the CPU supports them.
void attentionRangeAvx2(const AttentionArgs &args, int64_t begin, int64_t end);
void attentionRangeAvx512(const AttentionArgs &args, int64_t begin,
                          int64_t end);

} // namespace fm::kernels::detail
