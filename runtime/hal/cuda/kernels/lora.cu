// The up product of the CUDA device's LoRA side path (CudaKernels.cpp's
// MatmulKernel): after the base matmul and each term's down product t = x·Aᵀ
// (the matvec and GEMM kernels on A, an nn.Linear [rank][k]), each term adds
// scale · t · Bᵀ to its columns of y, as the CPU's CpuLora.cpp does.
#include "common.cuh"
#include "qdecode.h"

/// y[m][n] += scale · Σ_r t[m][r] · bt[r][n] over the term's `rows` columns
/// (y points at its first): bt = Bᵀ [rank][rows], f16 (kind 1) or packed
/// 8-bit balanced (kind 2, `group` columns per scale). Grid (ceil(rows /
/// 256), M), 256 threads, a thread per column.
extern "C" __global__ void __launch_bounds__(256)
    fm_lora_up(const float *t, int64_t tStride, const uint8_t *bt, int kind, int group,
               int rank, int rows, float scale, float *y, int64_t yStride) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= rows)
    return;
  const float *tr = t + int64_t(blockIdx.y) * tStride;
  float acc = 0.0f;
  if (kind == 1) {
    const uint16_t *b = reinterpret_cast<const uint16_t *>(bt);
    for (int r = 0; r < rank; ++r)
      acc += tr[r] * fm_cuda::halfBitsToFloat(b[int64_t(r) * rows + n]);
  } else {
    const int64_t rowBytes = fm_cuda::qRowBytes(8, group, false, rows);
    const float center = fm_cuda::qCenter(8, false);
    for (int r = 0; r < rank; ++r) {
      const uint8_t *row = bt + int64_t(r) * rowBytes;
      const float w = (float(fm_cuda::qQuant(row, 8, group, n)) - center) *
                      fm_cuda::halfBitsToFloat(fm_cuda::qHalfBits(row, 8, group, rows, n, false));
      acc += tr[r] * w;
    }
  }
  y[int64_t(blockIdx.y) * yStride + n] += scale * acc;
}
