// The interface of the hand-written GPU kernels (the GLSL of hal/vulkan/shaders, which the Metal
// device runs translated to MSL): how each weight kind is bound, the dispatch grid of the team
// kernels and matmul.comp's push constants. API-neutral, so the Vulkan and Metal devices bind
// the same kernels from one definition.
#pragma once

#include "hal/Device.h"
#include "kernels/qformat.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fm::hal::gpu {

/// How the kernels read a weight of some kind.
struct WeightBinding {
  std::string suffix;         // kernel variant: "f32", "f16", "q"
  uint32_t elemSize = 4;      // bytes per bound element
  std::vector<uint32_t> spec; // QBITS, QGROUP, QAFFINE (packed only): specialization constants

  explicit WeightBinding(const WeightDesc &w) {
    switch (w.kind) {
    case WeightKind::F32:
      suffix = "f32";
      elemSize = 4;
      break;
    case WeightKind::F16:
      suffix = "f16";
      elemSize = 2;
      break;
    case WeightKind::Quant:
      suffix = "q";
      elemSize = 1;
      spec = {uint32_t(w.format.bits), uint32_t(w.format.group),
              w.format.grid == kernels::QuantGrid::Affine ? 1u : 0u};
      break;
    }
  }
  /// Elements (bytes when packed) of one row of k inputs.
  uint32_t rowElems(const WeightDesc &w, int64_t k) const {
    return w.kind == WeightKind::Quant ? uint32_t(kernels::packedRowBytes(w.format, k))
                                       : uint32_t(k);
  }
  bool sameAs(const WeightBinding &o) const { return suffix == o.suffix && spec == o.spec; }
};

/// Bytes that `rows` rows of `r` span.
inline uint64_t rowsBytes(const Rows &r, int64_t rows) {
  return rows <= 0 ? 0
                   : uint64_t(rows - 1) * uint64_t(r.stride) * 4 + uint64_t(r.width) * 4;
}

/// The grid of `tiles` tiles: x at most 65535 (the least maxComputeWorkGroupCount Vulkan
/// guarantees), the rest folded into y; the kernels index with the push constant tilesX.
inline void foldTiles(uint32_t tiles, uint32_t *x, uint32_t *y) {
  *x = std::max<uint32_t>(1, std::min<uint32_t>(tiles, 65535));
  *y = (tiles + *x - 1) / *x;
}

inline uint32_t ceilDiv(uint64_t a, uint64_t b) { return uint32_t((a + b - 1) / b); }

/// The team kernels (matmul, MoE): weight rows per workgroup, activation rows per workgroup
/// (shaders/matmul.comp).
constexpr uint32_t kTeams = 4, kMr = 8;

/// shaders/matmul.comp's push constants.
struct MatmulPush {
  uint32_t xOff, xStride, yOff, yStride, wOff, rowElems, K, N, M, tilesX, accumulate;
};

/// shaders/embed*.comp push constants.
struct EmbedPush {
  uint32_t rowOff, outOff, width;
};

/// shaders/attention*.comp push constants.
struct AttentionPush {
  uint32_t qOff, qStride, oOff, oStride, kOff, vOff, pos0, H, KVH, D, window;
  float scale, vScale;
};

/// the rows kernels (shaders/rows*.comp) push constants.
struct RowsPush {
  uint32_t xOff, xStride, yOff, yStride, width;
  float alpha, beta;
};

/// shaders/moe_route.comp push constants.
struct MoeRoutePush {
  uint32_t M, E, topK, normTopk;
};

/// shaders/moe_plan.comp push constants.
struct MoePlanPush {
  uint32_t slots, E, upTiles, downTiles, mr;
};

/// the MoE experts' up projection push constants.
struct MoeUpPush {
  uint32_t xOff, xStride, gateOff, upOff, rowElems, K, I, expert, topK, sharedExpert, M;
};

/// the MoE experts' down projection push constants.
struct MoeDownPush {
  uint32_t downOff, rowElems, I, K, expert, topK, sharedExpert, M;
};

/// shaders/moe_combine.comp push constants.
struct MoeCombinePush {
  uint32_t yOff, yStride, K, topK, M, accumulate, sharedExpert;
};

/// shaders/lora_up.comp (y += s·t·Bᵀ) push constants.
struct LoraUpPush {
  uint32_t tOff, tStride, tCol, yOff, yStride, bOff, rowElems, R, N, M, groupsX;
  float scale;
};

/// One adapter term of the fused LoRA matmul (shaders/matmul.comp with LORA).
struct LoraMatmulTerm {
  uint32_t bOff;  // byte of Bᵀ's row 0 in its binding
  int32_t col0;   // the term's first column, relative to the dispatch's
  uint32_t rows;  // its columns (Bᵀ's row length)
  uint32_t tColR; // t's first column | rank << 16 (rank 0: no term)
  uint32_t group; // 0: f16 Bᵀ; else the 8-bit rows' group
  float scale;
};
/// The fused LoRA matmul's push constants: matmul.comp's, t's layout and
/// up to kLoraTerms terms (124 bytes, within the 128 Vulkan guarantees).
constexpr int kLoraTerms = 3;
struct LoraMatmulPush {
  MatmulPush base;
  uint32_t tOff, tStride;
  LoraMatmulTerm term[kLoraTerms];
};
static_assert(sizeof(LoraMatmulPush) == 124, "matmul.comp's LORA push constants");
// matmul.comp's std430 layout, field by field (LORA_TERMS there is 3).
static_assert(sizeof(LoraMatmulTerm) == 24, "matmul.comp's LoraTerm");
static_assert(offsetof(LoraMatmulPush, tOff) == sizeof(MatmulPush) &&
                  offsetof(LoraMatmulPush, term) == sizeof(MatmulPush) + 8,
              "matmul.comp's LORA push constants: t's layout, then the terms");

} // namespace fm::hal::gpu
