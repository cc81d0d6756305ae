// Prefill GEMM on tensor cores: Y[M][N] (+)= X[M][K] · Wᵀ for an nn.Linear
// weight W [N][K] in a packed qformat.h format, with mma.sync m16n8k16
// (f16 inputs, f32 accumulation; sm_80 and newer).
//
// A block of 256 threads (8 warps, 2 x 4) computes a 64 x 64 tile of Y,
// stepping K by 32: the threads convert 64 x 32 activations to f16 and
// dequantize 64 x 32 weights to f16 (qdecode.h: the value is
// (q - center) * scale (+ min), rounded once to f16) into shared memory,
// then each warp runs 2 x 2 x 2 mma.sync on its 32 x 16 sub-tile. Rows of
// X or W past M or N load as zeros and are not stored; K is a multiple of
// the group (>= 32), so of 32. The fragment layouts are PTX ISA §9.7.13.4.8
// (m16n8k16, .f16): with g = lane / 4 and t = lane % 4, A's registers hold
// (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..); B's (k = 2t..2t+1,
// n = g), (k = 2t+8.., n = g); C's (g, 2t..2t+1), (g+8, 2t..2t+1).
//
// f16 holds activations up to 65504 only: a 32-input chunk of a row past
// that (a warp vote while converting; the warp holds the row's 32 inputs)
// is divided by the power of two gemmRangeScale gives (qdecode.h) before
// its conversion, and in a block with such a chunk each row's accumulators
// are rescaled around that k step's mma so that the products count times
// the row's scale (f32), so large rows stay finite and as exact as the
// others. Blocks without one run the plain path; a block that meets one
// stops there and redoes its tile on the scaled path, out of line
// (qgemmScaled), so the hot path's registers are the pre-guard ones.
#include "common.cuh"
#include "qdecode.h"

namespace fm_cuda {
namespace {

constexpr int kBM = kGemmTileM, kBN = kGemmTileN, kBK = 32;
static_assert(kGemmThreads == 256, "8 warps as 2 x 4 (gemmWarpRow/Col)");
// Shared rows padded by 8 halves: the fragment loads of a warp then hit
// distinct banks.
constexpr int kLd = kBK + 8;

#ifdef FM_CUDA_EMU // the block emulator's equivalents (common.cuh)
__device__ __forceinline__ uint16_t floatToHalfBits(float f) {
  return fm_cuda_emu::floatToHalf(f);
}
__device__ __forceinline__ float reciprocal(float s) { return 1.0f / s; }
__device__ __forceinline__ uint32_t pairAt(const uint16_t *p) {
  return __ldg(p) | uint32_t(__ldg(p + 1)) << 16;
}
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
  fm_cuda_emu::mma16816(c, a, b);
}
#else
__device__ __forceinline__ uint16_t floatToHalfBits(float f) {
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

// 1 / s, exact for the powers of two of gemmRangeScale.
__device__ __forceinline__ float reciprocal(float s) {
  float r;
  asm("rcp.rn.f32 %0, %1;" : "=f"(r) : "f"(s));
  return r;
}

__device__ __forceinline__ uint32_t pairAt(const uint16_t *p) {
  return *reinterpret_cast<const uint32_t *>(p);
}

__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

// The warp's 2 x 2 x 2 mma.sync over one k step of 32: its 32 x 16
// sub-tile at (wm, wn) of the block's tile, added into c.
__device__ __forceinline__ void warpTileMma(const uint16_t (&as)[kBM][kLd],
                                            const uint16_t (&bs)[kBN][kLd], int wm,
                                            int wn, int g, int t, float (&c)[2][2][4]) {
#pragma unroll
  for (int kk = 0; kk < kBK; kk += 16) {
    uint32_t a[2][4], b[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int r = wm + 16 * i + g;
      a[i][0] = pairAt(&as[r][kk + 2 * t]);
      a[i][1] = pairAt(&as[r + 8][kk + 2 * t]);
      a[i][2] = pairAt(&as[r][kk + 2 * t + 8]);
      a[i][3] = pairAt(&as[r + 8][kk + 2 * t + 8]);
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int n = wn + 8 * j + g;
      b[j][0] = pairAt(&bs[n][kk + 2 * t]);
      b[j][1] = pairAt(&bs[n][kk + 2 * t + 8]);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j)
        mma16816(c[i][j], a[i], b[j]);
  }
}

// A block's whole 64 x 64 tile. SCALED false: the hot path, which stores
// nothing and returns false as soon as one of the block's chunks is past
// f16's range (the barrier's vote); SCALED true: the rare path, which
// scales such chunks (see the file comment) and always stores.
template <int BITS, int GROUP, bool AFFINE, bool SCALED>
__device__ __forceinline__ bool
qgemmTile(const float *__restrict__ x, int64_t xStride, const uint8_t *__restrict__ w,
          float *__restrict__ y, int64_t yStride, int M, int N, int K, int accumulate,
          uint16_t (&as)[kBM][kLd], uint16_t (&bs)[kBN][kLd], float (&rowScale)[kBM]) {
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = gemmWarpRow(warp), wn = gemmWarpCol(warp); // the warp's sub-tile
  const int g = lane >> 2, t = lane & 3;
  const int64_t rowBytes = qRowBytes(BITS, GROUP, AFFINE, K);
  const float center = qCenter(BITS, AFFINE);

  constexpr int kLoadUnroll = SCALED ? 1 : kBM * kBK / 256;
  float acc[2][2][4] = {};
  for (int k0 = 0; k0 < K; k0 += kBK) {
    // 64 x 32 of each operand: 8 elements per thread, a row's 32 columns
    // read by 32 consecutive threads (one warp).
    bool big = false;
    // (Unrolled in the hot path, so that its 8 loads are in flight at once;
    // a loop in the scaled one, whose registers count in the kernel's too.)
#pragma unroll kLoadUnroll
    for (int i = 0; i < kBM * kBK / 256; ++i) {
      const int r = i * 8 + (tid >> 5), c = tid & 31;
      const int m = m0 + r;
      const float xv = m < M ? __ldg(x + int64_t(m) * xStride + k0 + c) : 0.0f;
      big = big || fabsf(xv) > kF16Max;
      as[r][c] = floatToHalfBits(xv);
      if (SCALED && c == 0)
        rowScale[r] = 1.0f;
      const int n = n0 + r;
      float v = 0.0f;
      if (n < N) {
        const uint8_t *row = w + int64_t(n) * rowBytes;
        const float q = float(qQuant(row, BITS, GROUP, k0 + c));
        v = (q - center) * halfBitsToFloat(qHalfBits(row, BITS, GROUP, K, k0 + c, false));
        if (AFFINE)
          v += halfBitsToFloat(qHalfBits(row, BITS, GROUP, K, k0 + c, true));
      }
      bs[r][c] = floatToHalfBits(v);
    }
    if (!SCALED) {
      // The barrier before the mma also tells the block whether any of its
      // chunks is past f16 (the same answer in every thread): then the
      // scaled path redoes the tile.
      if (__syncthreads_or(big))
        return false;
      warpTileMma(as, bs, wm, wn, g, t, acc);
      __syncthreads();
      continue;
    }
    // A chunk of the warp's rows past f16's range: the warp converts its 8
    // rows again, each divided by its scale (warp-uniform branch).
    if (__any_sync(kFullMask, big)) {
#pragma unroll 1
      for (int i = 0; i < kBM * kBK / 256; ++i) {
        const int r = i * 8 + (tid >> 5), c = tid & 31;
        const int m = m0 + r;
        const float xv = m < M ? __ldg(x + int64_t(m) * xStride + k0 + c) : 0.0f;
        const float s = gemmRangeScale(warpMax(fabsf(xv)));
        as[r][c] = floatToHalfBits(xv * reciprocal(s));
        if (c == 0)
          rowScale[r] = s;
      }
    }
    // Each accumulator is divided by its row's scale before the mma adds
    // this step's products of the scaled inputs, and multiplied back after:
    // acc + s·(x/s)·w, exact steps for a power of two, and no second
    // accumulator's registers. (The scales are read again after the mma:
    // none live across it.)
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float inv = reciprocal(rowScale[wm + 16 * i + g + 8 * h]);
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            acc[i][j][2 * h + e] *= inv;
      }
    warpTileMma(as, bs, wm, wn, g, t, acc);
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float s = rowScale[wm + 16 * i + g + 8 * h];
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            acc[i][j][2 * h + e] *= s;
      }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int r, c;
        gemmAccumulatorAt(lane, i, j, e, &r, &c);
        const int m = m0 + wm + r, n = n0 + wn + c;
        if (m < M && n < N) {
          float *out = y + int64_t(m) * yStride + n;
          *out = accumulate ? *out + acc[i][j][e] : acc[i][j][e];
        }
      }
  return true;
}

// The rare scaled path out of line, so that it is not scheduled into the
// hot path. ptxas counts a callee's registers in its kernel's too, which is
// why the scaled path's load loop is not unrolled: runtime.cuda.ptxas holds
// every GEMM build to 128 registers (2 blocks of 256 threads per SM) with
// no spills. The tiles are the kernel's (generic addressing here: the rare
// path).
template <int BITS, int GROUP, bool AFFINE>
__device__ __noinline__ void qgemmScaled(const float *x, int64_t xStride, const uint8_t *w,
                                         float *y, int64_t yStride, int M, int N, int K,
                                         int accumulate, uint16_t (&as)[kBM][kLd],
                                         uint16_t (&bs)[kBN][kLd], float (&rowScale)[kBM]) {
  qgemmTile<BITS, GROUP, AFFINE, true>(x, xStride, w, y, yStride, M, N, K, accumulate, as,
                                       bs, rowScale);
}

template <int BITS, int GROUP, bool AFFINE>
__device__ __forceinline__ void qgemm(const float *x, int64_t xStride, const uint8_t *w,
                                      float *y, int64_t yStride, int M, int N, int K,
                                      int accumulate) {
  __shared__ uint16_t as[kBM][kLd];
  __shared__ uint16_t bs[kBN][kLd];
  __shared__ float rowScale[kBM]; // a k step's scale of each row (1: none)
  // The plain path leaves the block after a barrier with nothing stored;
  // the scaled one then starts the tile over.
  if (!qgemmTile<BITS, GROUP, AFFINE, false>(x, xStride, w, y, yStride, M, N, K, accumulate,
                                             as, bs, rowScale))
    qgemmScaled<BITS, GROUP, AFFINE>(x, xStride, w, y, yStride, M, N, K, accumulate, as, bs,
                                     rowScale);
}

} // namespace
} // namespace fm_cuda

// fm_qgemm_mma_q<bits>g<group><b|a>: grid (ceil(N / 64), ceil(M / 64)),
// 256 threads, at most 128 registers (2 blocks per SM).
#define FM_QGEMM(BITS, GROUP, AFFINE, SUFFIX)                                      \
  extern "C" __global__ void __launch_bounds__(256, 2)                             \
      fm_qgemm_mma_q##BITS##g##GROUP##SUFFIX(                                      \
          const float *x, int64_t xStride, const uint8_t *w, float *y,             \
          int64_t yStride, int M, int N, int K, int accumulate) {                  \
    fm_cuda::qgemm<BITS, GROUP, AFFINE>(x, xStride, w, y, yStride, M, N, K,        \
                                        accumulate);                               \
  }
#define FM_QGEMM_GROUPS(BITS, AFFINE, SUFFIX)                                      \
  FM_QGEMM(BITS, 32, AFFINE, SUFFIX)                                               \
  FM_QGEMM(BITS, 64, AFFINE, SUFFIX)                                               \
  FM_QGEMM(BITS, 128, AFFINE, SUFFIX)
FM_QGEMM_GROUPS(2, false, b)
FM_QGEMM_GROUPS(2, true, a)
FM_QGEMM_GROUPS(4, false, b)
FM_QGEMM_GROUPS(4, true, a)
FM_QGEMM_GROUPS(8, false, b)
FM_QGEMM_GROUPS(8, true, a)
