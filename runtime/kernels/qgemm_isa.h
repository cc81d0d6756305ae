// Internal: what qgemm.cpp hands each instruction set's GEMM kernel: the
// prepared int8 activations, the panel geometry, and the per-path entry
// points it dispatches to and splits across threads.
#pragma once

#include "kernels/qgemm_layout.h"

#include <atomic>
#include <cstdint>
#include <type_traits>

#if defined(__GNUC__)
#define FM_GEMM_INLINE inline __attribute__((always_inline))
#else
#define FM_GEMM_INLINE inline
#endif

namespace fm::kernels::gdetail {

/// The most x rows one range call covers (qgemm.cpp's work units): the
/// kernels' f32 accumulators for a unit, [kMaxUnitRows][32], live on the
/// stack.
constexpr int64_t kMaxUnitRows = 64;

// ---------------------------------------------------------------------------
// Prepared activations (one call; made by an ISA's `prepare`, qgemm_prepare.h)
//
// x row m is quantized per block of U = min(group, 64) inputs exactly as
// qmatmul does (qmatmul_isa.h, QActivations): D = 1 (int8) or 2 (int8x2,
// int11) int8 digits, x ~= dx * xv with xv = xq[0] (int8) or
// 2^S xq[0] + xq[1] (S = hiShift: 8 for int8x2; for int11 int11Shift: 5
// at 2 bits, 4 at 4 bits, 3 wider). Digit d of
// row m is "prepared row" r = m * D + d:
//
//   int8_t xq[Rp][Kp];  // Rp = 16 * ceil(M * D / 16) (int11: 32 * ceil(M /
//                       // 16)); rows >= M * D and inputs >= K are 0
//                       // (whole AMX tiles of 16 rows)
//   float dx[M][Kp / U];    // the block's scale (a / 2^S)
//   float xs[M][Kp / G];    // sum over group g of dx * xv: the group's sum
//                           // of dequantized x, for the grid offset and
//                           // the affine minimum (half of it in the
//                           // pair-tile layout at 4 bits: the fold's
//                           // half step, pairTileHalfOffset)
//
// (In the pair-tile layout dx and xs are [ceil(M / 16)][Kp / U][16]
// instead: a 16-row A tile's values of one unit are one 64-byte run, which
// the AMX fold reads at fixed offsets; actRowOffset.)
//
// A kernel computes, per (row m, output n, block), the exact int32
//   dot = sum_k (q_k - o) * xv_k   (o: 0, or 128 where an ISA needs signed
//                                   8-bit quants)
// and y[m][n] = sum_blocks s * dx * dot + sum_groups mo * xs, where
// mo = s * (o - c) (balanced, c = (2^b - 1) / 2) or m + o * s (affine).
// |dot| < 64 * 255 * 127 * 257 < 2^31 for every format and mode.
//
// The pair-tile layout (Act::pairTile: int11 on the AMX path for balanced
// group-32 weights at 2 or 4 bits and group-64 ones at 2) keeps the same
// bytes but puts both digits of x row m side by side, one 64-byte run per 32-input unit u:
// xq + 2 m Kp + 64 u holds xq[0] of the unit's 32 inputs, then xq[1] of
// them. One K = 64 tile row is then a whole unit's x (12 bits at 4 bits,
// 13 at 2), which meets the weights as [2^S v; v] (qgemm_amx.cpp).
// ---------------------------------------------------------------------------

/// Digit 0's weight 2^S in int8x2.
constexpr int kInt8x2Shift = 8;
/// int11's S for `bits`-bit weights: the largest that the pair tile's
/// weight bytes leave room for (qgemm_amx.cpp), 3 elsewhere. So x is
/// 2^S xq[0] + xq[1] with the second digit within +-2^(S-1): 13 bits at
/// 2 bits (32 w, w = 2q - 3: |32 w| <= 96), 12 at 4 bits (16 (q - 8) in
/// [-128, 112]; pairTileHalfOffset), 11 for wider weights. The same S on
/// every path: int11 is one rounding whichever path runs it.
constexpr int int11ShiftForBits(int bits) {
  return bits == 2 ? 5 : bits == 4 ? 4 : 3;
}
/// Whether the pair tile holds `bits`-bit weights as q - 2^(b-1) (the
/// weight is that plus 1/2, the half added in the fold from x's group sum)
/// instead of the doubled, centred 2q - (2^b - 1): at 4 bits, where 16
/// (2q - 15) would not fit a signed byte.
constexpr bool pairTileHalfOffset(int bits) { return bits == 4; }
inline int int11Shift(QuantFormat f) { return int11ShiftForBits(f.bits); }

struct Act {
  const int8_t *xq;
  int64_t ldx; // Kp
  const float *dx;
  int64_t ldd; // Kp / U
  const float *xs;
  int64_t lds; // Kp / G
  int digits;  // D
  int unit;    // U
  int hiShift; // S: digit 0 weighs 2^S (D == 2)
  bool pairTile; // the pair-tile layout above (only where GemmIsa::pairTile)
};

/// Where row m's dx (stride ldd = a.ldd) or xs (a.lds) starts; its unit u
/// is u elements further, or 16 u in the pair-tile layout.
inline int64_t actRowOffset(const Act &a, int64_t m, int64_t stride) {
  return a.pairTile ? m / 16 * 16 * stride + m % 16 : m * stride;
}

/// Inputs per x block (one dx): a weight unit (min(group, 64)), or 32 for
/// int11 at every group, so that one K = 64 pair tile holds a block's two
/// digits whatever the group (group 64 at 2 bits takes the pair tile too:
/// usesPairTile).
inline int actUnitInputs(QuantFormat f, bool int11) {
  return int11 ? 32 : quantUnitInputs(f);
}

/// Bytes of each part of the prepared activations for M rows.
struct ActSizes {
  int64_t rowsPadded; // Rp
  int64_t kPadded;    // Kp
  int64_t xqBytes, dxFloats, xsFloats;
};

/// `int11`: rows padded for the pair-tile layout too (whole 16-row tiles of
/// x rows, 2 Kp bytes each).
inline ActSizes actSizes(QuantFormat f, int64_t M, int64_t K, int digits,
                         bool int11) {
  ActSizes s;
  const int64_t U = actUnitInputs(f, int11);
  s.kPadded = (K + kPanelBlockInputs - 1) / kPanelBlockInputs *
              kPanelBlockInputs;
  s.rowsPadded = int11 ? (M + 15) / 16 * 32 : (M * digits + 15) / 16 * 16;
  s.xqBytes = s.rowsPadded * s.kPadded;
  // The pair-tile layout's dx and xs fill whole 16-row tiles.
  const int64_t scaleRows = int11 ? (M + 15) / 16 * 16 : M;
  s.dxFloats = scaleRows * (s.kPadded / U);
  s.xsFloats = scaleRows * (s.kPadded / f.group);
  return s;
}

/// One call's operands.
struct Params {
  const uint8_t *w;
  QuantFormat f;
  PanelGeometry geo;
  int64_t N, K;
  Act act;
  const float *xf; // the f32 x (K floats per row), for the f32 path
  float *y;
  int64_t ldy;
  bool accumulate;
};

/// Prepares x rows [m0, m1) into `a` (whose buffers hold M rows; the
/// caller zeroes the padding rows M * D .. Rp).
using PrepareFn = void (*)(const float *x, int64_t K, QuantFormat f,
                           int64_t m0, int64_t m1, const Act &a);
/// y rows [m0, m1) x panels [p0, p1), single-threaded.
using RangeFn = void (*)(const Params &p, int64_t m0, int64_t m1, int64_t p0,
                         int64_t p1);

struct GemmIsa {
  PrepareFn prepare; // null: the kernel reads the f32 x
  RangeFn range;
  /// Called on each thread before its first range (AMX: the tile
  /// configuration); may be null.
  void (*threadSetup)(const Params &p);
  void (*threadTeardown)();
  /// Whether int11 calls on balanced group-32 weights at 2 or 4 bits (and
  /// group 64 at 2: usesPairTile) take the pair-tile layout (prepare and
  /// range both read Act::pairTile).
  bool pairTile = false;
};

/// Whether a call of `act` (D = 2, hiShift int11Shift: int11) on format f with a
/// path of `isa` uses the pair-tile layout.
inline bool usesPairTile(const GemmIsa &isa, QuantFormat f, bool int11) {
  // 4 bits: the fold's half step comes from x's group sum per unit, so the
  // unit must be the group; 2 bits: the grid offset is inside the dot, and
  // a group of 64 is two units under one scale.
  return isa.pairTile && int11 && f.grid == QuantGrid::Balanced &&
         (f.bits == 2 ? f.group == 32 || f.group == 64
                      : f.bits == 4 && f.group == 32);
}

/// Calls kernel(std::integral_constant<int, U>, std::bool_constant<Centred>)
/// for p's unit U (32 or 64) and whether its folds are centred: a unit that
/// is a whole group of a balanced grid (group 32 or 64) takes the grid
/// offset into the fold's first product, acc += s (dx dot + (o - c) xs),
/// instead of adding mo xs after it (one multiply fewer).
template <class Kernel>
FM_GEMM_INLINE void withUnit(const Params &p, Kernel &&kernel) {
  const bool centred =
      p.f.grid == QuantGrid::Balanced && p.act.unit == p.f.group;
  using U32 = std::integral_constant<int, 32>;
  using U64 = std::integral_constant<int, 64>;
  if (p.act.unit == 32)
    return centred ? kernel(U32{}, std::true_type{})
                   : kernel(U32{}, std::false_type{});
  return centred ? kernel(U64{}, std::true_type{})
                 : kernel(U64{}, std::false_type{});
}

// Each is defined only where CMake compiles its file, and must only be
// called where the CPU supports it. [0] two digits (int8x2 and int11: the
// prepare and the kernels read Act::hiShift), [1] int8.
extern const GemmIsa kGemmGeneric[2];
extern const GemmIsa kGemmGenericF32;
extern const GemmIsa kGemmAvx2[2];
extern const GemmIsa kGemmAvx512Vnni[2];
extern const GemmIsa kGemmAmx[2];
extern const GemmIsa kGemmNeon[2];
extern const GemmIsa kGemmNeonI8mm[2];

/// One x row (m) of panels [p0, p1) on AVX-512 VNNI (qgemm_matvec_x86.h:
/// the decode matvec from the Panel16 layout), also the AMX path's for a
/// lone row (16-row tiles would compute 15 rows for nothing); not the
/// pair-tile layout. Takes tile rows out with GFNI where the CPU has it and
/// gMatvecGfni allows (avx512VnniGfniMatvec, qgemm_matvec_gfni.cpp), else by
/// shift and mask.
void avx512VnniMatvec(const Params &p, int64_t m, int64_t p0, int64_t p1);
void avx512VnniGfniMatvec(const Params &p, int64_t m, int64_t p0, int64_t p1);
/// qgemmSetMatvecGfni's switch (tests); true by default.
extern std::atomic<bool> gMatvecGfni;

/// AMX: whether CPUID reports AMX-TILE and AMX-INT8, the OS enables the
/// tile state, and Linux granted this process its use
/// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); asked once.
bool amxUsable();

/// The decoded per-row values of group g of a panel: the f32 scale s and
/// mo = s * (o - c) or m + o * s (see above) for the panel's 16 rows.
void panelScales(const uint8_t *panel, const PanelGeometry &geo, QuantFormat f,
                 int64_t g, int offset, float *s, float *mo);

} // namespace fm::kernels::gdetail
