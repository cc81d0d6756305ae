// The packed low-bit weight formats (Q2/Q4/Q8 in runtime/schema/fmb.fbs):
// the bit-exact layout that the compiler's artifact writer produces
// (quantize.h) and the runtime kernels read (qmatmul.h).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>

namespace fm::kernels {

/// How a group's quants map to values; q is the unsigned b-bit quant,
/// s the group's scale, m the group's minimum (both IEEE binary16).
///  - Balanced: value = (q - (2^b - 1)/2) * s. Symmetric, no zero: for
///    2 bits the levels are {-1.5, -0.5, 0.5, 1.5} * s, for 4 bits
///    {-7.5, ..., 7.5} * s, for 8 bits {-127.5, ..., 127.5} * s.
///  - Affine: value = q * s + m.
enum class QuantGrid : uint8_t { Balanced = 0, Affine = 1 };

/// bits in {2, 4, 8}; group (inputs per scale) in {32, 64, 128}.
struct QuantFormat {
  int bits;
  int group;
  QuantGrid grid;
};

// ---------------------------------------------------------------------------
// Layout
//
// A weight [N rows (outputs)][K inputs] (nn.Linear) is stored row after row,
// packedRowBytes(f, K) bytes per row, rows not padded (the artifact aligns
// the tensor's first byte to 64). K must be a multiple of the group. One row:
//
//   [quants: K*bits/8 bytes][scales: K/group x f16][mins: K/group x f16]
//                                                  (affine only)
//
// Scales and mins are little-endian IEEE binary16, group g at index g (the
// group of input k is k / group). Keeping them apart from the quants lets a
// SIMD loop load 64 bytes of quants at a time, whatever the group.
//
// Quants come in units of U = min(group, 64) inputs, unit u holding inputs
// [u*U, (u+1)*U) in U*bits/8 bytes. Within a unit the 8/bits "planes" of a
// byte hold runs of contiguous inputs: byte k (0 <= k < U*bits/8) holds, in
// bits [bits*j, bits*j + bits), the quant of input j * (U*bits/8) + k of the
// unit, for j = 0 .. 8/bits - 1. So one shift-and-mask of a vector of bytes
// yields a run of contiguous inputs:
//
//   2 bits, U = 64 (group 64, 128): 16 bytes; byte k = inputs k (bits 0-1),
//     16+k (bits 2-3), 32+k (bits 4-5), 48+k (bits 6-7), k = 0..15.
//   2 bits, U = 32 (group 32):       8 bytes; byte k = inputs k, 8+k, 16+k,
//     24+k, k = 0..7.
//   4 bits, U = 64: 32 bytes; byte k = input k (low nibble), 32+k (high).
//   4 bits, U = 32: 16 bytes; byte k = input k (low nibble), 16+k (high).
//   8 bits: byte k = input k.
//
// Bits per weight: bits + 16/group (balanced), bits + 32/group (affine):
//
//   bits  group  balanced  affine
//     2     32     2.5      3.0
//     2     64     2.25     2.5
//     2    128     2.125    2.25
//     4     32     4.5      5.0
//     4     64     4.25     4.5
//     4    128     4.125    4.25
//     8     32     8.5      9.0
//     8     64     8.25     8.5
//     8    128     8.125    8.25
// ---------------------------------------------------------------------------

/// One unit of quants (see above): U inputs at Bits bits.
template <int Bits, int U> struct QuantUnit { uint8_t qs[U * Bits / 8]; };
static_assert(sizeof(QuantUnit<2, 32>) == 8, "Q2 unit of 32 inputs");
static_assert(sizeof(QuantUnit<2, 64>) == 16, "Q2 unit of 64 inputs");
static_assert(sizeof(QuantUnit<4, 32>) == 16, "Q4 unit of 32 inputs");
static_assert(sizeof(QuantUnit<4, 64>) == 32, "Q4 unit of 64 inputs");
static_assert(sizeof(QuantUnit<8, 32>) == 32, "Q8 unit of 32 inputs");
static_assert(sizeof(QuantUnit<8, 64>) == 64, "Q8 unit of 64 inputs");

/// A group's scale or minimum: IEEE binary16 bits.
struct QuantHalf {
  uint16_t bits;
};
static_assert(sizeof(QuantHalf) == 2, "f16 scale/min");

inline bool isValidQuantFormat(QuantFormat f) {
  return (f.bits == 2 || f.bits == 4 || f.bits == 8) &&
         (f.group == 32 || f.group == 64 || f.group == 128) &&
         (f.grid == QuantGrid::Balanced || f.grid == QuantGrid::Affine);
}

/// Inputs per unit, U = min(group, 64).
inline int quantUnitInputs(QuantFormat f) {
  return f.group < 64 ? f.group : 64;
}

/// Bytes of quants in a row of K inputs (the offset of the scales).
inline int64_t quantBytes(QuantFormat f, int64_t K) { return K * f.bits / 8; }

/// Groups (scales) per row.
inline int64_t quantGroups(QuantFormat f, int64_t K) { return K / f.group; }

/// (2^bits - 1) / 2: the balanced grid's offset, value = (q - c) * s.
inline float balancedCenter(int bits) {
  return static_cast<float>((1 << bits) - 1) * 0.5f;
}

/// Bytes of one packed row of K inputs. K must be a multiple of the group.
inline size_t packedRowBytes(QuantFormat f, int64_t K) {
  assert(isValidQuantFormat(f) && "invalid quant format");
  assert(K % f.group == 0 && "K must be a multiple of the group");
  int64_t halves = quantGroups(f, K) * (f.grid == QuantGrid::Affine ? 2 : 1);
  return static_cast<size_t>(quantBytes(f, K) + 2 * halves);
}

/// Storage cost per weight, scales and mins included (the table above).
inline double bitsPerWeight(QuantFormat f) {
  return f.bits + (f.grid == QuantGrid::Affine ? 32.0 : 16.0) / f.group;
}

/// The quant of input k of a row whose quants start at `quants`.
inline int quantAt(const uint8_t *quants, QuantFormat f, int64_t k) {
  int64_t U = quantUnitInputs(f);
  int64_t unitBytes = U * f.bits / 8;
  int64_t u = k / U, i = k % U;
  int64_t j = i / unitBytes, byte = i % unitBytes;
  return (quants[u * unitBytes + byte] >> (f.bits * j)) & ((1 << f.bits) - 1);
}

} // namespace fm::kernels
