// Internal: the quantizer's scale-search primitives (quantize.cpp) that
// each instruction set implements (quantize_search_impl.h), and the table
// quantize.cpp picks at run time.
//
// Every path computes bit for bit what the one-candidate-at-a-time search
// before it did (kernels/quantize_reference.cpp): the same float operations
// in the same order per candidate (one rounding per C++ operation, no FMA
// contraction: the files are built with -ffp-contract=off), each error a
// sum of kSumLanes partial sums over k mod kSumLanes, added up in lane
// order. What changed is the layout of the work: a batch of candidate
// scales sits in the vector lanes and each weight is broadcast to all of
// them, so one pass over a group prices 8 or 16 candidates, and the f16
// rounding of the candidates is vectorized. The artifact therefore does
// not depend on the machine that compiled it.
#pragma once

#include "kernels/qformat.h"
#include "kernels/quantize.h"

#include <cstdint>

namespace fm::kernels::qsearch {

/// Partial sums per squared-error sum (fixes the rounding of every error).
constexpr int kSumLanes = 8;
/// Most candidates one batch call prices.
constexpr int kMaxBatch = 16;

struct Group {
  const float *w;
  int n;        // a multiple of kSumLanes (groups are 32, 64 or 128)
  float qmax;   // 2^bits - 1
  float center; // balanced offset (2^bits - 1) / 2
  float sqSum;  // sum of w^2, in k order
};

struct SearchIsa {
  /// err[i] = sum_k (w_k - (q_k - c) s_i)^2 with q_k = round(clamp(w_k/s_i
  /// + c)) for scales s_i (f16 values), or g.sqSum where !(s_i > 0);
  /// 1 <= count <= kMaxBatch.
  void (*balancedErrors)(const Group &g, const float *s, int count,
                         float *err);
  /// err[i] = sum_k (w_k - (q_k s_i + m_i))^2, q_k = round(clamp((w_k -
  /// m_i)/s_i)) (q_k = 0 where !(s_i > 0)).
  void (*affineErrors)(const Group &g, const float *s, const float *m,
                       int count, float *err);
  /// The least-squares balanced scale for the quants that scale s assigns
  /// (s itself when they are all at the center).
  float (*balancedRefit)(const Group &g, float s);
  /// v[i] = the f16 value nearest min(max(v[i], -65504), 65504).
  void (*toHalfAndBack)(float *v, int count);
  /// The group's quants for the chosen f16 scale s (and minimum m, affine)
  /// into q, and the exact squared error and sum of w^2 (double, in
  /// kSumLanes partial sums).
  void (*finish)(const Group &g, bool affine, float s, float m, uint8_t *q,
                 double *sqError, double *sqSum);
};

// Defined where CMake compiles quantize_avx2.cpp / quantize_avx512.cpp
// (FM_KERNELS_X86); callable only where the CPU supports them.
extern const SearchIsa kSearchGeneric;
extern const SearchIsa kSearchAvx2;
extern const SearchIsa kSearchAvx512;

/// quantizeRows on an explicit table (which the CPU must support): for
/// tests that check every path packs the same bytes.
QuantError quantizeRowsWith(const SearchIsa &isa, const float *w, int64_t N,
                            int64_t K, QuantFormat f, uint8_t *out);

} // namespace fm::kernels::qsearch
