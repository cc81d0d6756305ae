// The MoE kernel's routing on the device (decode) and data movement
// (CudaMoe.cpp; the matmuls are the matvec and GEMM kernels): gathering an expert's rows, the combine of the chosen
// experts' outputs in rank order (as the CPU's Moe sums them), and the
// shared expert's sigmoid-gated add. One block per row.
#include "common.cuh"
#include "kernels/moe_route.h"

/// The routing of a MoE decode step on the device (one thread: a few rows
/// of E logits): kernels/moe_route.h's moeRoute, the CPU's own rule, writes
/// choice[r·k + j] (the expert) and weight[r·k + j] in rank order. Scratch:
/// probs [rows][E], stamp and count [E]. The grouped matvecs then read
/// `choice` (kernels/matvec.cu), and fm_moe_combine combines slot r·k + j.
extern "C" __global__ void __launch_bounds__(32)
    fm_moe_route(const float *logits, int rows, int E, int topK, int normTopk,
                 float *probs, int *stamp, int *count, int *choice, float *weight) {
  if (threadIdx.x == 0 && blockIdx.x == 0)
    fm::kernels::moeRoute<int>(logits, probs, rows, E, topK, normTopk != 0, stamp, count,
                               choice, weight);
}

// xg[i] = x[slotRow[first + i]], K floats each; grid (n rows).
extern "C" __global__ void __launch_bounds__(256)
    fm_moe_gather(const float *x, int64_t xStride, const int *slotRow,
                  int first, float *xg, int K) {
  const float *src = x + int64_t(slotRow[first + blockIdx.x]) * xStride;
  float *dst = xg + int64_t(first + blockIdx.x) * K;
  for (int c = threadIdx.x; c < K; c += blockDim.x)
    dst[c] = src[c];
}

// y[r] (+)= Σ_j weight[r·k + j] · out[rowSlot[r·k + j]] in rank order j;
// grid (M rows).
extern "C" __global__ void __launch_bounds__(256)
    fm_moe_combine(const float *out, int K, const int *rowSlot,
                   const float *weight, int topK, float *y, int64_t yStride,
                   int accumulate) {
  const int r = blockIdx.x;
  float *yr = y + int64_t(r) * yStride;
  for (int c = threadIdx.x; c < K; c += blockDim.x) {
    float v = accumulate ? yr[c] : 0.0f;
    for (int j = 0; j < topK; ++j)
      v += weight[r * topK + j] * out[int64_t(rowSlot[r * topK + j]) * K + c];
    yr[c] = v;
  }
}

// y[r] += sigmoid(logit[r]) · out[r]; grid (M rows).
extern "C" __global__ void __launch_bounds__(256)
    fm_moe_add_gated(const float *out, int K, const float *logit, float *y,
                     int64_t yStride) {
  const int r = blockIdx.x;
  const float g = 1.0f / (1.0f + expf(-logit[r]));
  const float *o = out + int64_t(r) * K;
  float *yr = y + int64_t(r) * yStride;
  for (int c = threadIdx.x; c < K; c += blockDim.x)
    yr[c] += g * o[c];
}
