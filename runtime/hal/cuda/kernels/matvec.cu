// Matrix-vector kernels of the CUDA device: y[m] (+)= W · x[m] for nn.Linear
// weights W [N][K] stored f32, f16 or in a packed low-bit format of
// runtime/kernels/qformat.h (bit-exact the layout the CPU kernels read).
//
// One warp per output row, gridDim.y = the rows of x (decode: 1). A lane
// takes 8- or 16-byte chunks of the row's quants; each chunk lies in one
// group and holds 8/bits "planes" of 8 or 16 contiguous inputs, so one
// shift-and-mask of the chunk's words yields the quants of one plane.
//  - fm_qmatvec_f32_*: f32 activations, exact to f32 rounding (the CPU's
//    generic path is the reference).
//  - fm_qmatvec_dp4a_*: activations quantized to int8 per block of 32
//    inputs (fm_quantize_x_q8), integer dot products with dp4a: the CPU's
//    QActivations::Int8 rounding, a quarter of the activation traffic.
#include "common.cuh"

namespace fm_cuda {
namespace {

template <int BITS, int GROUP, bool AFFINE> struct QFormat {
  static constexpr int kUnit = GROUP < 64 ? GROUP : 64; // inputs per unit
  static constexpr int kUnitBytes = kUnit * BITS / 8;
  static constexpr int kChunk = kUnitBytes >= 16 ? 16 : 8; // bytes per lane
  static constexpr int kWords = kChunk / 4;
  static constexpr int kPlanes = 8 / BITS;
  static constexpr uint32_t kMask = (1u << BITS) - 1;
  static constexpr uint32_t kByteMask = 0x01010101u * kMask;
  static constexpr float kCenter = AFFINE ? 0.0f : ((1 << BITS) - 1) * 0.5f;

  __device__ static int64_t rowBytes(int K) {
    return int64_t(K) * BITS / 8 + 2 * int64_t(K / GROUP) * (AFFINE ? 2 : 1);
  }
  /// Where chunk c starts: the unit's first input, the byte in the unit.
  __device__ static void locate(int c, int &base, int &b0) {
    const int byte = c * kChunk;
    base = byte / kUnitBytes * kUnit;
    b0 = byte % kUnitBytes;
  }
};

/// The chunk's bytes as words; rows need not be aligned (rowBytes is only
/// even), so a misaligned row reads bytes.
template <int WORDS>
__device__ __forceinline__ void loadChunk(const uint8_t *p, bool aligned,
                                          uint32_t (&w)[WORDS]) {
  if (aligned) {
    if constexpr (WORDS == 4) {
      const uint4 v = __ldg(reinterpret_cast<const uint4 *>(p));
      w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
    } else {
      const uint2 v = __ldg(reinterpret_cast<const uint2 *>(p));
      w[0] = v.x, w[1] = v.y;
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < WORDS; ++i)
    w[i] = uint32_t(__ldg(p + 4 * i)) | uint32_t(__ldg(p + 4 * i + 1)) << 8 |
           uint32_t(__ldg(p + 4 * i + 2)) << 16 |
           uint32_t(__ldg(p + 4 * i + 3)) << 24;
}

__device__ __forceinline__ void finish(float acc, float *y, bool accumulate) {
  acc = warpSum(acc);
  if ((threadIdx.x & 31) == 0)
    *y = accumulate ? *y + acc : acc;
}

template <int BITS, int GROUP, bool AFFINE>
__device__ void qmatvecF32(const uint8_t *__restrict__ w,
                           const float *__restrict__ x, int64_t xStride,
                           float *__restrict__ y, int64_t yStride, int N, int K,
                           int accumulate) {
  using F = QFormat<BITS, GROUP, AFFINE>;
  const int n = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (n >= N)
    return;
  const int lane = threadIdx.x & 31;
  const uint8_t *row = w + int64_t(n) * F::rowBytes(K);
  const uint16_t *scales =
      reinterpret_cast<const uint16_t *>(row + int64_t(K) * BITS / 8);
  const uint16_t *mins = scales + K / GROUP;
  const bool aligned = (reinterpret_cast<uintptr_t>(row) % F::kChunk) == 0;
  const float *xr = x + blockIdx.y * xStride;
  const int chunks = K * BITS / 8 / F::kChunk;
  float acc = 0.0f;
  for (int c = lane; c < chunks; c += 32) {
    int base, b0;
    F::locate(c, base, b0);
    uint32_t q[F::kWords];
    loadChunk<F::kWords>(row + c * F::kChunk, aligned, q);
    float dot = 0.0f, sum = 0.0f;
#pragma unroll
    for (int j = 0; j < F::kPlanes; ++j) {
      const float *xp = xr + base + j * F::kUnitBytes + b0;
#pragma unroll
      for (int i = 0; i < F::kWords; ++i)
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          const float xv = __ldg(xp + 4 * i + b);
          dot = fmaf(float((q[i] >> (8 * b + BITS * j)) & F::kMask), xv, dot);
          sum += xv;
        }
    }
    const int g = base / GROUP;
    const float s = halfBitsToFloat(__ldg(scales + g));
    if constexpr (AFFINE)
      acc += s * dot + halfBitsToFloat(__ldg(mins + g)) * sum;
    else
      acc += s * (dot - F::kCenter * sum);
  }
  finish(acc, y + blockIdx.y * yStride + n, accumulate);
}

template <int BITS, int GROUP, bool AFFINE>
__device__ void qmatvecDp4a(const uint8_t *__restrict__ w,
                            const int8_t *__restrict__ xq,
                            const float *__restrict__ xs, int64_t xRow, float *__restrict__ y,
                            int64_t yStride, int N, int K, int accumulate) {
  using F = QFormat<BITS, GROUP, AFFINE>;
  const int n = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (n >= N)
    return;
  const int lane = threadIdx.x & 31;
  const uint8_t *row = w + int64_t(n) * F::rowBytes(K);
  const uint16_t *scales =
      reinterpret_cast<const uint16_t *>(row + int64_t(K) * BITS / 8);
  const uint16_t *mins = scales + K / GROUP;
  const bool aligned = (reinterpret_cast<uintptr_t>(row) % F::kChunk) == 0;
  const int8_t *xr = xq + xRow * K;
  const float *sr = xs + xRow * (K / 32);
  const int chunks = K * BITS / 8 / F::kChunk;
  float acc = 0.0f;
  for (int c = lane; c < chunks; c += 32) {
    int base, b0;
    F::locate(c, base, b0);
    uint32_t q[F::kWords];
    loadChunk<F::kWords>(row + c * F::kChunk, aligned, q);
    const int g = base / GROUP;
    const float s = halfBitsToFloat(__ldg(scales + g));
    float part = 0.0f;
#pragma unroll
    for (int j = 0; j < F::kPlanes; ++j) {
      // A plane's 8 or 16 inputs start at a multiple of their count, so
      // they lie in one block of 32 (one activation scale).
      const int i0 = base + j * F::kUnitBytes + b0;
      const int32_t *xw = reinterpret_cast<const int32_t *>(xr + i0);
      int dq = 0, dx = 0;
#pragma unroll
      for (int i = 0; i < F::kWords; ++i) {
        const int32_t xv = __ldg(xw + i);
        dq = dp4a((q[i] >> (BITS * j)) & F::kByteMask, xv, dq);
        dx = dp4a(0x01010101u, xv, dx);
      }
      const float a = __ldg(sr + i0 / 32);
      if constexpr (AFFINE)
        part += a * (s * float(dq) + halfBitsToFloat(__ldg(mins + g)) * float(dx));
      else
        part += a * s * (float(dq) - F::kCenter * float(dx));
    }
    acc += part;
  }
  finish(acc, y + blockIdx.y * yStride + n, accumulate);
}

} // namespace
} // namespace fm_cuda

// One entry point per format: fm_qmatvec_{f32,dp4a,grouped,grouped_dp4a}_q<bits>g<group><b|a>.
// grouped: a MoE decode step routed on the device (CudaMoe.cpp): block row
// s = blockIdx.y is slot s, whose weight is the expert table's entry for
// expertOf[s] (a device pointer per expert) and whose x row is s / topK;
// its output is y row s.
#define FM_QMATVEC(BITS, GROUP, GRID, AFFINE)                                  \
  extern "C" __global__ void __launch_bounds__(256)                           \
      fm_qmatvec_f32_q##BITS##g##GROUP##GRID(                                  \
          const uint8_t *w, const float *x, int64_t xStride, float *y,         \
          int64_t yStride, int N, int K, int accumulate) {                     \
    fm_cuda::qmatvecF32<BITS, GROUP, AFFINE>(w, x, xStride, y, yStride, N, K,  \
                                             accumulate);                      \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(256)                           \
      fm_qmatvec_dp4a_q##BITS##g##GROUP##GRID(                                 \
          const uint8_t *w, const int8_t *xq, const float *xs, float *y,       \
          int64_t yStride, int N, int K, int accumulate) {                     \
    fm_cuda::qmatvecDp4a<BITS, GROUP, AFFINE>(w, xq, xs, blockIdx.y, y, yStride, \
                                              N, K, accumulate);               \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(256)                           \
      fm_qmatvec_grouped_q##BITS##g##GROUP##GRID(                              \
          const uint64_t *table, const int *expertOf, int topK, const float *x, \
          int64_t xStride, float *y, int64_t yStride, int N, int K) {          \
    const int s = blockIdx.y; /* x and y rows are the slot's, so strides 0 */ \
    fm_cuda::qmatvecF32<BITS, GROUP, AFFINE>(                                  \
        reinterpret_cast<const uint8_t *>(table[expertOf[s]]),                 \
        x + int64_t(s / topK) * xStride, 0, y + int64_t(s) * yStride, 0, N, K, \
        0);                                                                    \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(256)                           \
      fm_qmatvec_grouped_dp4a_q##BITS##g##GROUP##GRID(                         \
          const uint64_t *table, const int *expertOf, int topK,                \
          const int8_t *xq, const float *xs, float *y, int64_t yStride, int N, \
          int K) {                                                             \
    const int s = blockIdx.y;                                                  \
    fm_cuda::qmatvecDp4a<BITS, GROUP, AFFINE>(                                 \
        reinterpret_cast<const uint8_t *>(table[expertOf[s]]), xq, xs,         \
        s / topK, y + int64_t(s) * yStride, 0, N, K, 0);                       \
  }

#define FM_QMATVEC_GROUPS(BITS, GRID, AFFINE)                                  \
  FM_QMATVEC(BITS, 32, GRID, AFFINE)                                           \
  FM_QMATVEC(BITS, 64, GRID, AFFINE)                                           \
  FM_QMATVEC(BITS, 128, GRID, AFFINE)

FM_QMATVEC_GROUPS(2, b, false)
FM_QMATVEC_GROUPS(2, a, true)
FM_QMATVEC_GROUPS(4, b, false)
FM_QMATVEC_GROUPS(4, a, true)
FM_QMATVEC_GROUPS(8, b, false)
FM_QMATVEC_GROUPS(8, a, true)

/// xq[m][k] = round(x[m][k] / a), xs[m][k / 32] = a = max|x| / 127 over each
/// block of 32 inputs: one warp per block, gridDim.y = the rows.
extern "C" __global__ void __launch_bounds__(256)
    fm_quantize_x_q8(const float *x, int64_t xStride, int K, int8_t *xq,
                     float *xs) {
  const int blk = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (blk >= K / 32)
    return;
  const int lane = threadIdx.x & 31;
  const float v = x[blockIdx.y * xStride + blk * 32 + lane];
  const float a = fm_cuda::warpMax(fabsf(v)) / 127.0f;
  const float q = a > 0.0f ? rintf(v / a) : 0.0f;
  xq[int64_t(blockIdx.y) * K + blk * 32 + lane] = int8_t(q);
  if (lane == 0)
    xs[int64_t(blockIdx.y) * (K / 32) + blk] = a;
}

/// Dense weights, f32 or f16: one warp per output row.
template <typename T> __device__ float widenWeight(T v);
template <> __device__ float widenWeight<float>(float v) { return v; }
template <> __device__ float widenWeight<uint16_t>(uint16_t v) {
  return fm_cuda::halfBitsToFloat(v);
}

template <typename T>
__device__ void matvecDense(const T *w, const float *x, int64_t xStride,
                            float *y, int64_t yStride, int N, int K,
                            int accumulate) {
  const int n = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (n >= N)
    return;
  const T *row = w + int64_t(n) * K;
  const float *xr = x + blockIdx.y * xStride;
  float acc = 0.0f;
  for (int k = threadIdx.x & 31; k < K; k += 32)
    acc = fmaf(widenWeight<T>(__ldg(row + k)), __ldg(xr + k), acc);
  fm_cuda::finish(acc, y + blockIdx.y * yStride + n, accumulate);
}

extern "C" __global__ void __launch_bounds__(256)
    fm_matvec_f32(const float *w, const float *x, int64_t xStride, float *y,
                  int64_t yStride, int N, int K, int accumulate) {
  matvecDense<float>(w, x, xStride, y, yStride, N, K, accumulate);
}

extern "C" __global__ void __launch_bounds__(256)
    fm_matvec_f16(const uint16_t *w, const float *x, int64_t xStride, float *y,
                  int64_t yStride, int N, int K, int accumulate) {
  matvecDense<uint16_t>(w, x, xStride, y, yStride, N, K, accumulate);
}

// The grouped dense matvecs (see fm_qmatvec_grouped_*).
extern "C" __global__ void __launch_bounds__(256)
    fm_matvec_grouped_f32(const uint64_t *table, const int *expertOf, int topK,
                          const float *x, int64_t xStride, float *y, int64_t yStride, int N,
                          int K) {
  const int s = blockIdx.y;
  matvecDense<float>(reinterpret_cast<const float *>(table[expertOf[s]]),
                     x + int64_t(s / topK) * xStride, 0, y + int64_t(s) * yStride, 0, N, K, 0);
}

extern "C" __global__ void __launch_bounds__(256)
    fm_matvec_grouped_f16(const uint64_t *table, const int *expertOf, int topK,
                          const float *x, int64_t xStride, float *y, int64_t yStride, int N,
                          int K) {
  const int s = blockIdx.y;
  matvecDense<uint16_t>(reinterpret_cast<const uint16_t *>(table[expertOf[s]]),
                        x + int64_t(s / topK) * xStride, 0, y + int64_t(s) * yStride, 0, N,
                        K, 0);
}
