// Internal: what vit_attention.cpp hands each instruction-set path: the
// call's geometry, computed once, and one thread's scratch.
#pragma once

#include <cstdint>

namespace fm::kernels::detail {

/// Scratch arrays are padded to this many floats (a multiple of every
/// path's vector width), so that their layout does not depend on the path.
constexpr int64_t kVitPad = 16;

inline int64_t vitRoundUp(int64_t n) {
  return (n + kVitPad - 1) / kVitPad * kVitPad;
}

struct VitGeometry {
  const float *qkv, *relH, *relW, *padQkv;
  float *out;
  /// Window layers: [windows][R][C], each window's register outputs, for
  /// the mean that vit_attention.cpp takes afterwards.
  float *registerOut;
  int64_t ldQkv, ldOut;
  int64_t R, gh, gw, H, D, C;
  float scale;
  bool rel;
  /// Window side (0: global), windows per column and per row of the grid.
  int64_t window, windowsY, windowsX;
  /// The grid of one window (Sh = Sw = window) or the whole grid.
  int64_t Sh, Sw;
  /// Keys of one window: R + Sh·Sw; columns of the key matrix: keys, then
  /// the 2Sh − 1 rows of relPosH, then the 2Sw − 1 of relPosW, each part
  /// padded to kVitPad.
  int64_t keys, keysPad, relHPad, relWPad, columns;
  int64_t dPad;
  /// Queries per work item and items per (window, head).
  int64_t queryBlock, queryBlocks;
};

/// One thread's scratch: keyT [D][columns] (keys transposed, then the
/// tables), values [keys][dPad], scores [queryBlock][columns], outRows
/// [queryBlock][dPad]. keyT and values hold the (window, head) named by
/// cachedWindow/cachedHead, so consecutive items of one pair gather once.
struct VitScratch {
  float *keyT, *values, *scores, *outRows;
  int64_t cachedWindow = -1, cachedHead = -1;
};

inline int64_t vitScratchFloats(const VitGeometry &g) {
  return g.D * g.columns + g.keys * g.dPad + g.queryBlock * g.columns +
         g.queryBlock * g.dPad;
}

/// Items [begin, end): item = (window · H + head) · queryBlocks + block.
using VitRangeFn = void (*)(const VitGeometry &g, int64_t begin, int64_t end,
                            VitScratch &scratch);

// Defined where CMake compiles vit_attention_avx2.cpp /
// vit_attention_avx512.cpp (FM_KERNELS_X86); callable only where the CPU
// supports them.
extern const VitRangeFn kVitAttentionGeneric;
extern const VitRangeFn kVitAttentionAvx2;
extern const VitRangeFn kVitAttentionAvx512;

} // namespace fm::kernels::detail
