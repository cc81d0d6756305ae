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
//   struct Superblock {           // 64 * P * D + 128 bytes
//     int8_t xq[D][P][64]; // xq[d][j][p]: digit d of the input in plane j
//                          //   of byte p
//     float dx[16];      // dx[i]: scale of the x block holding lane i's inputs
//     float corr[16];    // corr[i]: (c - o) * dx[i] * sum of lane i's xv
//   };
//   Superblock sb[ceil(K / (64 * P))];   // inputs past K: xq = dx = corr = 0
//   float gsum[K / group];               // affine: sum_{k in group} dx * xv
//
// D is the number of int8 digits per input (QActivations):
//  - Int8 (D = 1): xv = xq[0], x ~= dx * xv with dx = max|x| / 127 per block
//    (like ggml's Q8): error up to dx / 2.
//  - Int8x2 (D = 2): xq[0] = round(x / a) with a = max|x| / 127, xq[1] =
//    round(256 * (x / a - xq[0])) (clamped to +-127), xv = 256 * xq[0] +
//    xq[1] and dx = a / 256: error up to a / 512, ~16-bit activations for
//    the price of a second integer dot over the same unpacked weights.
//
// Lane i (of 16 int32 lanes) is the dot product of weight bytes 4i..4i+3
// of the superblock (all planes) with their xv: these bytes hold inputs of
// one unit (qformat.h), hence of one x block (blocks are units: min(group,
// 64) inputs) and one weight group. c is the balanced grid's center (0 for
// affine) and o the offset the ISA subtracts from 8-bit quants to make them
// signed (0 or 128), so that
//   sum_k (q_k - c) x_k = sum_lanes dx * int_dot(q - o, xv) - corr,
// with int_dot(q, xv) = 256 * int_dot(q, xq[0]) + int_dot(q, xq[1]) for
// Int8x2 (|int_dot| < 2^26 for every format: exact in int32).
// ---------------------------------------------------------------------------

struct ActLayout {
  int planes;              // P = 8 / bits
  int digits;              // D: 1 (Int8) or 2 (Int8x2)
  int64_t superblocks;     // ceil(K / (64 * P))
  int64_t digitBytes;      // 64 * P: one digit's bytes in a superblock
  int64_t superblockBytes; // 64 * P * D + 128
  int64_t gsumOffset;      // bytes from the row start to gsum
  int64_t rowBytes;        // one prepared row, a multiple of 64
};

inline ActLayout actLayout(QuantFormat f, int64_t K, int digits) {
  ActLayout l;
  l.planes = 8 / f.bits;
  l.digits = digits;
  int64_t sbInputs = 64 * l.planes;
  l.superblocks = (K + sbInputs - 1) / sbInputs;
  l.digitBytes = 64 * l.planes;
  l.superblockBytes = l.digitBytes * digits + 128;
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

/// Prepares one x row of K floats into `out` (preparedRowBytes(f, K)).
using PrepareFn = void (*)(const float *x, int64_t K, QuantFormat f,
                           uint8_t *out);
/// y[m][n] (+)= x[m] · dequant(w[n]) for m in [m0, m1), n in [n0, n1);
/// single-threaded.
using RangeFn = void (*)(const Params &p, int64_t m0, int64_t m1, int64_t n0,
                         int64_t n1);

struct QMatmulIsa {
  PrepareFn prepare; // null: `range` reads f32 x
  RangeFn range;
  /// Bytes of one prepared row (with `prepare`).
  int64_t (*preparedRowBytes)(QuantFormat f, int64_t K);
  /// What qmatmulPathName() says when this table runs, e.g. "avx512-gfni".
  const char *name;
};

// Each is defined only where CMake compiles its file (FM_KERNELS_X86 /
// FM_KERNELS_NEON), and must only be called where the CPU supports it.
// The int8 paths come in pairs: [0] Int8x2 activations, [1] Int8.
extern const QMatmulIsa kQMatmulGeneric;
extern const QMatmulIsa kQMatmulAvx2[2];
extern const QMatmulIsa kQMatmulAvx512Vnni[2];
// kQMatmulAvx512Vnni with its planes through vgf2p8affineqb (AVX512-VNNI
// and GFNI).
extern const QMatmulIsa kQMatmulAvx512VnniGfni[2];
extern const QMatmulIsa kQMatmulAvx512F32;
extern const QMatmulIsa kQMatmulNeon[2];

} // namespace fm::kernels::qdetail
