// Bidirectional multi-head attention of a ViT block (docs/vit.md): global
// or ViTDet window layers, the decomposed relative-position bias, and
// register tokens with the Register-Window mean.
#pragma once

#include "kernels/isa.h"

#include <cstdint>

namespace fm::rt {
class ThreadPool;
} // namespace fm::rt

namespace fm::kernels {

struct VitAttentionArgs {
  /// [registers + gridH·gridW][ldQkv]: the qkv projection of the LN1-normed
  /// tokens, registers first, then the patches row-major. A row is [q; k;
  /// v], H·D floats each; head h uses floats h·D … h·D + D − 1 of each part.
  const float *qkv = nullptr;
  int64_t ldQkv = 0; ///< 0: 3·H·D.
  int64_t registers = 0;
  int64_t gridH = 0, gridW = 0;
  int64_t H = 0, D = 0;
  /// Multiplies q·k (usually D^-½); the relative-position bias is not scaled.
  float scale = 1.0f;
  /// 0: global attention, every token over every token. Otherwise ViTDet
  /// windows of window × window patches: the grid is zero-padded at the
  /// bottom/right to whole windows, each window attends over [registers ;
  /// its window² tokens, padded ones included], and each register's output
  /// is the mean of its outputs over all windows.
  int64_t window = 0;
  /// The decomposed relative-position tables, or both null: [2·Sh − 1][D]
  /// and [2·Sw − 1][D] with S = the window, or the grid's height and width
  /// on a global layer. For a query patch (qy, qx) and a key patch (ky, kx)
  /// of the same window (or grid), the score gains q·relPosH[qy − ky + Sh −
  /// 1] + q·relPosW[qx − kx + Sw − 1], from the unscaled q; scores that
  /// involve a register get no bias.
  const float *relPosH = nullptr, *relPosW = nullptr;
  /// Window layers: the qkv row of a padded token (3·H·D floats: the qkv
  /// bias, since a padded token is 0 after LN1), or null for zeros.
  const float *padQkv = nullptr;
  /// [registers + gridH·gridW][ldOut], heads concatenated; must not overlap
  /// qkv.
  float *out = nullptr;
  int64_t ldOut = 0; ///< 0: H·D.
};

/// Runs the attention of `args` (see VitAttentionArgs). Work items are
/// (window, head, block of queries), split across `pool` (may be null);
/// every output is computed by one item and the register mean is summed in
/// window order, so results do not depend on the thread count. Per-thread
/// scratch (keys, values and scores of one window and head) is kept
/// between calls.
void vitAttention(const VitAttentionArgs &args, fm::rt::ThreadPool *pool);

/// vitAttention on an explicit instruction-set path, which must be
/// available (kernelIsaAvailable); Neon runs the generic source (NEON is
/// baseline there). For tests and benchmarks.
void vitAttentionOn(KernelIsa isa, const VitAttentionArgs &args,
                    fm::rt::ThreadPool *pool);

/// Multiply-adds of one call (scores, relative positions and values), for
/// benchmarks.
int64_t vitAttentionFlops(const VitAttentionArgs &args);

} // namespace fm::kernels
