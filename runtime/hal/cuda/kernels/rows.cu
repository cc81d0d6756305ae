// Row kernels of the CUDA device: RMSNorm, rotary position embedding,
// SiLU-gated product, and the glue of the collective hook (sums of rows, a
// scale, a row copy). One block per row unless said otherwise.
#include "common.cuh"

/// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight (weight may be null:
/// no scaling). out may be x.
extern "C" __global__ void __launch_bounds__(1024)
    fm_rmsnorm(const float *x, int64_t xStride, const float *weight,
               float *out, int64_t outStride, int width, float eps) {
  __shared__ float shared[32];
  const float *xr = x + blockIdx.x * xStride;
  float ss = 0.0f;
  for (int c = threadIdx.x; c < width; c += blockDim.x)
    ss = fmaf(xr[c], xr[c], ss);
  ss = fm_cuda::blockSum(ss, shared);
  const float inv = rsqrtf(ss / float(width) + eps);
  float *o = out + blockIdx.x * outStride;
  for (int c = threadIdx.x; c < width; c += blockDim.x)
    o[c] = xr[c] * inv * (weight ? weight[c] : 1.0f);
}

/// Rotary embedding in place over `heads` heads of headDim values of row r
/// (position pos0 + r), the half-split (rotate_half) convention: pairs
/// (i, i + headDim/2) rotate by (pos) * theta^(-2i/headDim). Thread i of the
/// block handles pair i of every head.
extern "C" __global__ void __launch_bounds__(256)
    fm_rope(float *x, int64_t stride, int heads, int headDim, int64_t pos0,
            float theta) {
  const int half = headDim / 2;
  float *row = x + blockIdx.x * stride;
  const float pos = float(pos0 + blockIdx.x);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    // Same float expression as the CPU reference: pos * theta^(-2i/D).
    const float invFreq = powf(theta, -2.0f * float(i) / float(headDim));
    float s, c;
    sincosf(pos * invFreq, &s, &c);
    for (int h = 0; h < heads; ++h) {
      float *hp = row + h * headDim;
      const float a = hp[i], b = hp[i + half];
      hp[i] = a * c - b * s;
      hp[i + half] = b * c + a * s;
    }
  }
}

/// out[r][c] = silu(gate[r][c]) * up[r][c], silu(v) = v / (1 + e^-v).
extern "C" __global__ void __launch_bounds__(256)
    fm_silu_mul(const float *gate, int64_t gateStride, const float *up,
                int64_t upStride, float *out, int64_t outStride, int width) {
  const float *g = gate + blockIdx.x * gateStride;
  const float *u = up + blockIdx.x * upStride;
  float *o = out + blockIdx.x * outStride;
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    const float v = g[c];
    o[c] = v / (1.0f + expf(-v)) * u[c];
  }
}

/// dst[r] (+)= src[r]: the collective hook's partial sums on one device.
extern "C" __global__ void __launch_bounds__(256)
    fm_add_rows(const float *src, int64_t srcStride, float *dst,
                int64_t dstStride, int width, int accumulate) {
  const float *s = src + blockIdx.x * srcStride;
  float *d = dst + blockIdx.x * dstStride;
  for (int c = threadIdx.x; c < width; c += blockDim.x)
    d[c] = accumulate ? d[c] + s[c] : s[c];
}

/// x[r] *= scale.
extern "C" __global__ void __launch_bounds__(256)
    fm_scale_rows(float *x, int64_t stride, int width, float scale) {
  float *r = x + blockIdx.x * stride;
  for (int c = threadIdx.x; c < width; c += blockDim.x)
    r[c] *= scale;
}

/// x[r] = 0 (an all-reduce with no inputs).
extern "C" __global__ void __launch_bounds__(256)
    fm_zero_rows(float *x, int64_t stride, int width) {
  float *r = x + blockIdx.x * stride;
  for (int c = threadIdx.x; c < width; c += blockDim.x)
    r[c] = 0.0f;
}
