// Internal: the blocked (flash-style) attention body over the primitives of
// attention_impl.h (scores, online softmax, p·V), instantiated per
// instruction set like AttentionKernel.
//
// A work item is (query block, KV head g): up to kQueryRows consecutive
// query rows and the H / KVH query heads of g, R = rows x heads query
// vectors in all. For each block of kBlock keys that any of them sees, the
// K and V rows of g are touched once (from L1/L2) by all R vectors, each
// scoring only its visible sub-range (causal mask, sliding window) and
// updating its running maximum and sum as attention() does.
#pragma once

#include "kernels/attention_impl.h"

namespace fm::kernels::detail {

template <typename Tag> struct FlashAttention {
  using Base = AttentionKernel<Tag>;
  static constexpr int kBlock = Base::kBlock;
  // Query vectors per item: their running state and, per key block, their
  // scores (kVectors x kBlock floats) live on the stack.
  static constexpr int kVectors = 64;
  // Query rows per block (fewer when a group has many heads).
  static constexpr int kQueryRows = 16;

  static int64_t rowsPerBlock(const AttentionArgs &a) {
    const int64_t heads = a.H / a.KVH;
    int64_t rows = kVectors / (heads < kVectors ? heads : kVectors);
    return rows < kQueryRows ? rows : kQueryRows;
  }

  // Visible keys of query row s: [begin, end).
  static int64_t keyBegin(const AttentionArgs &a, int64_t s) {
    const int64_t i = a.pos0 + s;
    return a.window > 0 && i - a.window + 1 > 0 ? i - a.window + 1 : 0;
  }

  /// Query rows [s0, s1) and heads [h0, h0 + heads) of KV head g
  /// (heads <= kVectors / (s1 - s0)).
  template <typename T>
  static void item(const AttentionArgs &a, int64_t s0, int64_t s1, int64_t g,
                   int64_t h0, int heads) {
    const int64_t D = a.D, rowStride = a.KVH * D;
    const T *kBase = static_cast<const T *>(a.k) + g * D;
    const T *vBase = static_cast<const T *>(a.v) + g * D;
    const float scoreScale = a.int8 ? a.scale * a.kScale : a.scale;
    const float valueScale = a.int8 ? a.vScale : 1.0f;
    const int rows = static_cast<int>(s1 - s0), R = rows * heads;
    float runningMax[kVectors], runningSum[kVectors];
    for (int v = 0; v < R; ++v) {
      runningMax[v] = -__builtin_inff();
      runningSum[v] = 0.0f;
    }
    for (int r = 0; r < rows; ++r)
      for (int hh = 0; hh < heads; ++hh) {
        float *out = a.out + ((s0 + r) * a.H + h0 + hh) * D;
        for (int64_t d = 0; d < D; ++d)
          out[d] = 0.0f;
      }
    // The keys any row of the block sees.
    const int64_t jFirst = keyBegin(a, s0), jEnd = a.pos0 + s1;
    float p[kBlock];
    for (int64_t j0 = jFirst; j0 < jEnd; j0 += kBlock) {
      const int64_t n = jEnd - j0 < kBlock ? jEnd - j0 : kBlock;
      const T *kRows = kBase + j0 * rowStride;
      const T *vRows = vBase + j0 * rowStride;
      const int64_t nextRows =
          jEnd - (j0 + kBlock) < kBlock ? jEnd - (j0 + kBlock) : kBlock;
      for (int64_t b = 0; b < nextRows; ++b) {
        Base::prefetchRow(kRows + (kBlock + b) * rowStride, D);
        Base::prefetchRow(vRows + (kBlock + b) * rowStride, D);
      }
      for (int r = 0; r < rows; ++r) {
        // Row s0 + r sees keys [lo, hi) of this block.
        const int64_t jb = keyBegin(a, s0 + r), je = a.pos0 + s0 + r + 1;
        const int64_t lo = jb > j0 ? jb : j0;
        const int64_t hi = je < j0 + n ? je : j0 + n;
        if (lo >= hi)
          continue;
        const int cnt = static_cast<int>(hi - lo), off = static_cast<int>(lo - j0);
        for (int hh = 0; hh < heads; ++hh) {
          const int v = r * heads + hh;
          const float *q = a.q + ((s0 + r) * a.H + h0 + hh) * D;
          float *out = a.out + ((s0 + r) * a.H + h0 + hh) * D;
          Base::scores(q, kRows + off * rowStride, rowStride, cnt, D,
                       scoreScale, p);
          const float blockMax = Base::maxOf(p, cnt);
          const float newMax =
              runningMax[v] < blockMax ? blockMax : runningMax[v];
          const float correction = Base::expNonPositive(runningMax[v] - newMax);
          const float blockSum = Base::expAndSum(p, cnt, newMax);
          runningSum[v] = runningSum[v] * correction + blockSum;
          runningMax[v] = newMax;
          if (correction != 1.0f)
            Base::scaleRow(out, D, correction);
          if (valueScale != 1.0f)
            for (int b = 0; b < cnt; ++b)
              p[b] *= valueScale;
          Base::accumulateV(out, p, vRows + off * rowStride, rowStride, cnt, D);
        }
      }
    }
    for (int r = 0; r < rows; ++r)
      for (int hh = 0; hh < heads; ++hh)
        Base::scaleRow(a.out + ((s0 + r) * a.H + h0 + hh) * D, D,
                       1.0f / runningSum[r * heads + hh]);
  }

  /// Items [begin, end) of blocks x KVH x (head chunks): query blocks are
  /// taken first, last, second, second to last, ... so that a contiguous
  /// range has about the same number of keys under the causal mask.
  static int64_t items(const AttentionArgs &a) {
    const int64_t rows = rowsPerBlock(a), heads = a.H / a.KVH;
    const int64_t perVectors = kVectors / rows; // heads per item
    const int64_t chunks = (heads + perVectors - 1) / perVectors;
    return (a.S + rows - 1) / rows * a.KVH * chunks;
  }

  static void range(const AttentionArgs &a, int64_t begin, int64_t end) {
    const int64_t rows = rowsPerBlock(a), heads = a.H / a.KVH;
    const int64_t perVectors = kVectors / rows;
    const int64_t chunks = (heads + perVectors - 1) / perVectors;
    const int64_t blocks = (a.S + rows - 1) / rows;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bi = t / (a.KVH * chunks), rest = t % (a.KVH * chunks);
      const int64_t block = bi % 2 == 0 ? bi / 2 : blocks - 1 - bi / 2;
      const int64_t g = rest / chunks, chunk = rest % chunks;
      const int64_t s0 = block * rows;
      const int64_t s1 = s0 + rows < a.S ? s0 + rows : a.S;
      const int64_t h0 = g * heads + chunk * perVectors;
      const int64_t hn =
          heads - chunk * perVectors < perVectors ? heads - chunk * perVectors
                                                  : perVectors;
      if (a.int8)
        item<int8_t>(a, s0, s1, g, h0, static_cast<int>(hn));
      else
        item<float>(a, s0, s1, g, h0, static_cast<int>(hn));
    }
  }
};

// Defined where CMake compiles attention_flash_avx2.cpp /
// attention_flash_avx512.cpp (FM_KERNELS_X86); callable only where the CPU
// supports them. Items [begin, end) of FlashAttention::items.
void attentionFlashRangeAvx2(const AttentionArgs &args, int64_t begin,
                             int64_t end);
void attentionFlashRangeAvx512(const AttentionArgs &args, int64_t begin,
                               int64_t end);

} // namespace fm::kernels::detail
