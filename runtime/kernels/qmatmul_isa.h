// Internal: the per-instruction-set qmatmul entry points that qmatmul.cpp
// dispatches to and splits across threads, and the layout of the int8
// activations they share.
#pragma once

#include "kernels/qformat.h"

#include <cstdint>

namespace fm::kernels::qdetail {

// ---------------------------------------------------------------------------
// Prepared (int8) activations, one x row, made once per call by an ISA's
// `prepare` and read by its `range`.
//
// The kernels consume a row of quants 64 bytes at a time: a "superblock" of
// 64 * P inputs (P = 8 / bits planes per byte: 256 inputs at 2 bits, 128 at
// 4, 64 at 8). x is laid out in the same order as the weight bytes, so that
// one shift-and-mask of 64 weight bytes meets 64 contiguous int8 x values:
//
//   struct Superblock {           // 64 * P + 128 bytes
//     int8_t xq[P][64];  // xq[j][p]: x of the input in plane j of byte p
//     float dx[16];      // dx[i]: scale of the x block holding lane i's inputs
//     float corr[16];    // corr[i]: (c - o) * dx[i] * sum of lane i's xq
//   };
//   Superblock sb[ceil(K / (64 * P))];   // inputs past K: xq = dx = corr = 0
//   float gsum[K / group];               // affine: sum_{k in group} dx * xq
//
// Lane i (of 16 int32 lanes) is the dot product of weight bytes 4i..4i+3
// of the superblock (all planes) with their x: these bytes hold inputs of
// one unit (qformat.h), hence of one x block (blocks are units: min(group,
// 64) inputs, x ≈ dx * xq with dx = max|x| / 127) and one weight group.
// c is the balanced grid's center (0 for affine) and o the offset the ISA
// subtracts from 8-bit quants to make them signed (0 or 128), so that
//   sum_k (q_k - c) x_k = sum_lanes dx * int_dot(q - o, xq) - corr.
// ---------------------------------------------------------------------------

struct ActLayout {
  int planes;              // P = 8 / bits
  int64_t superblocks;     // ceil(K / (64 * P))
  int64_t superblockBytes; // 64 * P + 128
  int64_t gsumOffset;      // bytes from the row start to gsum
  int64_t rowBytes;        // one prepared row, a multiple of 64
};

inline ActLayout actLayout(QuantFormat f, int64_t K) {
  ActLayout l;
  l.planes = 8 / f.bits;
  int64_t sbInputs = 64 * l.planes;
  l.superblocks = (K + sbInputs - 1) / sbInputs;
  l.superblockBytes = 64 * l.planes + 128;
  l.gsumOffset = l.superblocks * l.superblockBytes;
  int64_t bytes =
      l.gsumOffset + (f.grid == QuantGrid::Affine ? 4 * (K / f.group) : 0);
  l.rowBytes = (bytes + 63) / 64 * 64;
  return l;
}

/// One call's operands. `act` is the prepared activations (actStride bytes
/// per x row) for int8 paths, or the f32 x (K floats per row) for paths
/// without `prepare`.
struct Params {
  const uint8_t *w;
  QuantFormat f;
  int64_t K;
  int64_t rowBytes; // packedRowBytes(f, K)
  const void *act;
  int64_t actStride;
  float *y;
  int64_t ldy;
  bool accumulate;
};

/// Prepares one x row of K floats into `out` (actLayout(f, K).rowBytes).
using PrepareFn = void (*)(const float *x, int64_t K, QuantFormat f,
                           uint8_t *out);
/// y[m][n] (+)= x[m] · dequant(w[n]) for m in [m0, m1), n in [n0, n1);
/// single-threaded.
using RangeFn = void (*)(const Params &p, int64_t m0, int64_t m1, int64_t n0,
                         int64_t n1);

struct QMatmulIsa {
  PrepareFn prepare; // null: `range` reads f32 x
  RangeFn range;
  /// Bytes of one prepared row (with `prepare`); null: actLayout's.
  int64_t (*preparedRowBytes)(QuantFormat f, int64_t K);
};

// Each is defined only where CMake compiles its file (FM_KERNELS_X86 /
// FM_KERNELS_NEON), and must only be called where the CPU supports it.
extern const QMatmulIsa kQMatmulGeneric;
extern const QMatmulIsa kQMatmulAvx2;
extern const QMatmulIsa kQMatmulAvx512Vnni;
extern const QMatmulIsa kQMatmulAvx512F32;
extern const QMatmulIsa kQMatmulNeon;

} // namespace fm::kernels::qdetail
