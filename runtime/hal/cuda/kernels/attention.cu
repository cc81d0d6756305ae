// Decode attention of the CUDA device: causal GQA attention of the launch's
// query rows over one KV-cache slot (f32 or int8 rows), split-K over the
// sequence (flash-decoding) so that one query row still fills the GPU.
//
// fm_attention_split_*: grid (heads, splits, rows); block b of split sp
// takes the visible keys [lo + sp*chunk, lo + (sp+1)*chunk), each warp a
// strided subset of them with an online softmax (running max, sum and the
// value accumulator, headDim/32 floats per lane), then the block's warps
// merge through shared memory into one partial (max, sum, acc[headDim]).
// fm_attention_combine: grid (heads, rows) merges the splits' partials.
#include "common.cuh"

namespace fm_cuda {
namespace {

constexpr int kWarps = 4;    // per block
constexpr int kMaxDim = 256; // head size limit (8 values per lane)
constexpr int kPerLane = kMaxDim / 32;

__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ float widen(int8_t v) { return float(v); }

/// Partial layout for (row s, head h, split sp): [max, sum, acc[D]] at
/// ((s * H + h) * splits + sp) * (D + 2) floats.
template <typename T>
__device__ void attentionSplit(const float *__restrict__ q, int64_t qStride,
                               const T *__restrict__ k,
                               const T *__restrict__ v, int H, int KVH, int D,
                               float scale, float kScale, float vScale,
                               int64_t pos0, int64_t window, int chunk,
                               float *__restrict__ partial) {
  __shared__ float sMax[kWarps], sSum[kWarps];
  __shared__ float sAcc[kWarps][kMaxDim];
  const int h = blockIdx.x, sp = blockIdx.y, s = blockIdx.z;
  const int splits = gridDim.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = h / (H / KVH);
  const int64_t pos = pos0 + s;
  const int64_t lo = window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0;
  const int64_t begin = lo + int64_t(sp) * chunk;
  int64_t end = begin + chunk;
  if (end > pos + 1)
    end = pos + 1;
  const int64_t rowStride = int64_t(KVH) * D;

  float qv[kPerLane];
  const float *qr = q + s * qStride + int64_t(h) * D;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    // kScale folds into the score: q·(kScale·k8) = kScale·(q·k8).
    qv[i] = d < D ? qr[d] * scale * kScale : 0.0f;
  }
  float m = -INFINITY, l = 0.0f, acc[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i)
    acc[i] = 0.0f;
  for (int64_t j = begin + warp; j < end; j += kWarps) {
    const T *kr = k + j * rowStride + int64_t(g) * D;
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < D)
        dot = fmaf(qv[i], widen(kr[d]), dot);
    }
    const float score = warpSum(dot);
    const float mNew = fmaxf(m, score);
    const float corr = __expf(m - mNew); // 0 on the first key (m = -inf)
    const float p = __expf(score - mNew);
    l = l * corr + p;
    const T *vr = v + j * rowStride + int64_t(g) * D;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + 32 * i;
      acc[i] = acc[i] * corr + (d < D ? p * widen(vr[d]) : 0.0f);
    }
    m = mNew;
  }
  if (lane == 0) {
    sMax[warp] = m;
    sSum[warp] = l;
  }
#pragma unroll
  for (int i = 0; i < kPerLane; ++i)
    sAcc[warp][lane + 32 * i] = acc[i];
  __syncthreads();
  float M = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w)
    M = fmaxf(M, sMax[w]);
  float *out = partial + ((int64_t(s) * H + h) * splits + sp) * (D + 2);
  float L = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w)
    L += sSum[w] > 0.0f ? sSum[w] * __expf(sMax[w] - M) : 0.0f;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float a = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      a += sSum[w] > 0.0f ? sAcc[w][d] * __expf(sMax[w] - M) : 0.0f;
    out[2 + d] = a * vScale;
  }
  if (threadIdx.x == 0) {
    out[0] = M;
    out[1] = L;
  }
}

} // namespace
} // namespace fm_cuda

extern "C" __global__ void __launch_bounds__(128)
    fm_attention_split_f32(const float *q, int64_t qStride, const float *k,
                           const float *v, int H, int KVH, int D, float scale,
                           float kScale, float vScale, int64_t pos0,
                           int64_t window, int chunk, float *partial) {
  fm_cuda::attentionSplit<float>(q, qStride, k, v, H, KVH, D, scale, kScale,
                                 vScale, pos0, window, chunk, partial);
}

extern "C" __global__ void __launch_bounds__(128)
    fm_attention_split_i8(const float *q, int64_t qStride, const int8_t *k,
                          const int8_t *v, int H, int KVH, int D, float scale,
                          float kScale, float vScale, int64_t pos0,
                          int64_t window, int chunk, float *partial) {
  fm_cuda::attentionSplit<int8_t>(q, qStride, k, v, H, KVH, D, scale, kScale,
                                  vScale, pos0, window, chunk, partial);
}

/// out[s][h] = Σ_sp e^(m_sp - M) acc_sp / Σ_sp e^(m_sp - M) l_sp; grid
/// (heads, rows), `splits` partials each.
extern "C" __global__ void __launch_bounds__(128)
    fm_attention_combine(const float *partial, int splits, int H, int D,
                         float *out, int64_t outStride) {
  const int h = blockIdx.x, s = blockIdx.y;
  const float *p = partial + (int64_t(s) * H + h) * splits * (D + 2);
  float M = -INFINITY;
  for (int sp = 0; sp < splits; ++sp)
    if (p[sp * (D + 2) + 1] > 0.0f)
      M = fmaxf(M, p[sp * (D + 2)]);
  float L = 0.0f;
  for (int sp = 0; sp < splits; ++sp) {
    const float l = p[sp * (D + 2) + 1];
    if (l > 0.0f)
      L += l * __expf(p[sp * (D + 2)] - M);
  }
  const float inv = L > 0.0f ? 1.0f / L : 0.0f;
  float *o = out + s * outStride + int64_t(h) * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float a = 0.0f;
    for (int sp = 0; sp < splits; ++sp) {
      const float l = p[sp * (D + 2) + 1];
      if (l > 0.0f)
        a += p[sp * (D + 2) + 2 + d] * __expf(p[sp * (D + 2)] - M);
    }
    o[d] = a * inv;
  }
}
