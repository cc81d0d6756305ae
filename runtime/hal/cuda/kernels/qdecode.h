// Element access into a packed qformat.h weight row and the tile index math
// of the CUDA tensor-core GEMM (gemm.cu), shared with the host test that
// checks them against the CPU's dequantizeRow and the tile's coverage
// (test/unit/cuda/qdecode_test.cpp): plain C++ that is also device code.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define FM_QD_FN __host__ __device__ __forceinline__
#else
#define FM_QD_FN inline
#endif

namespace fm_cuda {

/// Bytes of one packed row of K inputs: quants, K/group f16 scales, and
/// for the affine grid K/group f16 minimums.
FM_QD_FN int64_t qRowBytes(int bits, int group, bool affine, int64_t K) {
  return K * bits / 8 + 2 * (K / group) * (affine ? 2 : 1);
}

/// The unsigned quant of input k of a row: unit k / U (U = min(group, 64)
/// inputs in U*bits/8 bytes), byte (k % U) % (U*bits/8), plane
/// (k % U) / (U*bits/8) in bits [bits*plane, bits*plane + bits).
FM_QD_FN uint32_t qQuant(const uint8_t *row, int bits, int group, int64_t k) {
  const int unit = group < 64 ? group : 64;
  const int unitBytes = unit * bits / 8;
  const int o = int(k % unit);
  const uint32_t byte = row[(k / unit) * unitBytes + o % unitBytes];
  return (byte >> (bits * (o / unitBytes))) & ((1u << bits) - 1u);
}

/// The f16 bits of input k's group scale (or minimum, for `min`).
FM_QD_FN uint16_t qHalfBits(const uint8_t *row, int bits, int group, int64_t K, int64_t k,
                            bool min) {
  const int64_t at = K * bits / 8 + 2 * (k / group + (min ? K / group : 0));
  return uint16_t(row[at] | (row[at + 1] << 8));
}

/// The quant's offset from the grid's zero: (2^bits - 1) / 2 for the
/// balanced grid, 0 for the affine one.
FM_QD_FN float qCenter(int bits, bool affine) {
  return affine ? 0.0f : float((1 << bits) - 1) * 0.5f;
}

/// The tensor-core GEMM's tile of Y per block and its threads (gemm.cu; the
/// host's launch geometry, CudaLinear.cpp).
constexpr int kGemmTileM = 64, kGemmTileN = 64, kGemmThreads = 256;

/// f16's largest finite value: the tensor-core GEMM's cvt.rn.f16.f32 makes
/// an activation past it inf, where the CPU (f32 or per-group int8 scales)
/// keeps it finite.
constexpr float kF16Max = 65504.0f;

/// What the tensor-core GEMM divides a 32-input chunk of an activation row by
/// before its f16 conversion, and multiplies that chunk's products by after,
/// given the chunk's largest magnitude: 1 while it fits f16 (the common path,
/// unchanged), else the power of two that brings it into [2^14, 2^15), below
/// kF16Max with f16's full 11 bits. A power of two divides and multiplies
/// exactly. Not finite (inf, NaN): 1, so inf stays inf as on the CPU.
FM_QD_FN float gemmRangeScale(float absmax) {
  if (!(absmax > kF16Max) || !(absmax <= 3.40282347e38f))
    return 1.0f;
  uint32_t bits;
  __builtin_memcpy(&bits, &absmax, 4);
  // absmax in [2^E, 2^(E+1)) with E >= 15 (normal: absmax > 2^15).
  const int E = int(bits >> 23) - 127;
  const uint32_t scale = uint32_t(E - 14 + 127) << 23;
  float s;
  __builtin_memcpy(&s, &scale, 4);
  return s;
}

/// The tensor-core GEMM's tiling (gemm.cu): 8 warps of a block as 2 x 4,
/// warp `warp` owning the 32 x 16 sub-tile at (gemmWarpRow, gemmWarpCol) of
/// the block's 64 x 64 tile of Y.
FM_QD_FN int gemmWarpRow(int warp) { return (warp >> 2) * 32; }
FM_QD_FN int gemmWarpCol(int warp) { return (warp & 3) * 16; }

/// Where accumulator e (0..3) of the mma.sync m16n8k16 tile (i, j) of a
/// warp's sub-tile lies in it, for lane `lane` (PTX ISA: c0, c1 at
/// (g, 2t), (g, 2t+1), c2, c3 at (g+8, 2t), (g+8, 2t+1); g = lane / 4,
/// t = lane % 4).
FM_QD_FN void gemmAccumulatorAt(int lane, int i, int j, int e, int *row, int *col) {
  *row = 16 * i + (lane >> 2) + (e >= 2 ? 8 : 0);
  *col = 8 * j + 2 * (lane & 3) + (e & 1);
}

} // namespace fm_cuda
