// The GEMM weight layout (GemmLayout::Panel16): the packed low-bit weights of
// qformat.h re-arranged, once, by repackForGemm (qgemm.h) so that prefill
// runs as a real GEMM: AMX B tiles, VNNI/sdot vectors and i8mm operands come
// out of one shift-and-mask of 64 bytes. The same quants and f16 scales as
// qformat.h, so the same bits per weight; only their order differs.
#pragma once

#include "kernels/qformat.h"

#include <cstddef>
#include <cstdint>

namespace fm::kernels {

/// Named weight layouts for the GEMM kernels. The value is stable (it will
/// name the layout in artifacts): never renumber.
enum class GemmLayout : uint8_t {
  /// Panels of 16 output rows, 64-input blocks of 16 "tile rows" of 16
  /// outputs x 4 inputs, bit-planed (below).
  Panel16 = 1,
};

/// Panel16's name in artifacts: the layout of the "cpu" WeightVariant that
/// fmc writes beside a packed weight (runtime/schema/fmb.fbs).
inline constexpr const char *kPanel16LayoutName = "panel16";

// ---------------------------------------------------------------------------
// Panel16
//
// A weight [N rows (outputs)][K inputs] in format f (bits b, group G) with
// K % G == 0. Rows are padded to Np = 16 * ceil(N / 16) and inputs to
// Kp = 64 * ceil(K / 64) (only group 32 pads K, by one group); padded
// weights have quant 0, scale 0 and minimum 0, so they contribute nothing.
//
//   Panel panel[Np / 16];                 // rows 16p .. 16p + 15
//   struct Panel {
//     Block block[Kp / 64];               // inputs 64i .. 64i + 63
//     QuantHalf scale[Kp / G][16];        // scale[g][r]: row 16p + r, group g
//     QuantHalf minimum[Kp / G][16];      // affine only
//   };
//
// A block holds 16 x 64 quants as 16 tile rows: tile row t (t = 0..15)
// covers inputs 4t .. 4t + 3 of the block, and its byte 4r + j is the quant
// of (panel row r, block input 4t + j): the layout of an AMX B tile (16
// rows x 64 bytes) and of a VNNI / sdot weight vector. The tile rows are
// stored bit-planed in V = 2b vectors of 64 bytes: bits [b*j, b*j + b) of
// byte i of vector v hold byte i of tile row v + V*j (j = 0 .. 8/b - 1):
//
//   2 bits: 4 vectors (256 bytes); vector v = tile rows v, v+4, v+8, v+12
//   4 bits: 8 vectors (512 bytes); vector v = tile rows v (low nibble), v+8
//   8 bits: 16 vectors (1024 bytes): the tile rows themselves
//
// so one shift and one mask of a vector yield a whole tile row. Scales and
// minimums are IEEE binary16, 16 per group (one 256-bit load, one
// vcvtph2ps). Values are those of qformat.h: (q - (2^b - 1)/2) * s balanced,
// q * s + m affine.
//
// Size: (Np/16) * ((Kp/64) * 128b + (Kp/G) * 32 * (affine ? 2 : 1)) bytes,
// which is N * packedRowBytes(f, K) when 16 | N and 64 | K.
// ---------------------------------------------------------------------------

constexpr int kPanelRows = 16;
constexpr int kPanelBlockInputs = 64;
constexpr int kTileRows = 16;

/// One 64-input block of a panel at Bits bits.
template <int Bits> struct PanelBlock {
  uint8_t vectors[2 * Bits][64];
};
static_assert(sizeof(PanelBlock<2>) == 256, "Q2 panel block: 4 vectors");
static_assert(sizeof(PanelBlock<4>) == 512, "Q4 panel block: 8 vectors");
static_assert(sizeof(PanelBlock<8>) == 1024, "Q8 panel block: 16 vectors");
static_assert(kTileRows * 4 == kPanelBlockInputs, "tile rows of 4 inputs");
static_assert(kPanelRows * 4 == 64, "a tile row is 64 bytes");

/// A group's 16 scales (or minimums), one per panel row.
struct PanelHalves {
  QuantHalf h[kPanelRows];
};
static_assert(sizeof(PanelHalves) == 32, "16 f16 per group");

/// The sizes of a Panel16 weight.
struct PanelGeometry {
  int64_t panels;      // Np / 16
  int64_t blocks;      // Kp / 64
  int64_t groups;      // Kp / G, padding included
  int64_t blockBytes;  // 128 * bits
  int64_t scaleOffset; // bytes from a panel's start to its scales
  int64_t minOffset;   // ... to its minimums (affine)
  int64_t panelBytes;
};

inline PanelGeometry panelGeometry(QuantFormat f, int64_t N, int64_t K) {
  PanelGeometry g;
  g.panels = (N + kPanelRows - 1) / kPanelRows;
  g.blocks = (K + kPanelBlockInputs - 1) / kPanelBlockInputs;
  g.groups = g.blocks * kPanelBlockInputs / f.group;
  g.blockBytes = 128 * f.bits;
  g.scaleOffset = g.blocks * g.blockBytes;
  g.minOffset = g.scaleOffset + g.groups * int64_t(sizeof(PanelHalves));
  g.panelBytes =
      g.minOffset +
      (f.grid == QuantGrid::Affine ? g.groups * int64_t(sizeof(PanelHalves))
                                   : 0);
  return g;
}

/// The quant of (panel row r, block input i) of a block at `block`.
inline int panelQuantAt(const uint8_t *block, int bits, int r, int i) {
  const int t = i / 4, V = 2 * bits;
  const int byte = 4 * r + i % 4;
  return (block[(t % V) * 64 + byte] >> (bits * (t / V))) & ((1 << bits) - 1);
}

} // namespace fm::kernels
