// The image encoders' kernels of the CUDA device (CudaVision.cpp; the
// semantics are docs/vit.md's and the CPU's, hal/cpu/CpuVisionKernels.cpp,
// and these are the Vulkan device's shaders, hal/vulkan/shaders, in CUDA):
// the matmul epilogue (bias, GELU family), LayerNorm, the patch embedding,
// ViT attention (global or ViTDet windows, decomposed relative positions,
// registers), the 3x3 convolution's unfolded taps and average pooling.
// Reductions go through shared memory in a fixed order, so results do not
// depend on the warp size or scheduling.
#include "common.cuh"

namespace fm_cuda {
namespace {

constexpr int kT = 64; // threads of the LayerNorm, patch and attention blocks

/// erf by the XLA/Eigen rational approximation (kernels/pointwise.h).
__device__ __forceinline__ float erfApprox(float x) {
  x = fminf(fmaxf(x, -4.0f), 4.0f);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return x * p / q;
}

/// σ(z) from e^-|z| (no overflow either way).
__device__ __forceinline__ float sigmoid(float z) {
  const float e = expf(-fabsf(z));
  const float inv = 1.0f / (1.0f + e);
  return z >= 0.0f ? inv : e * inv;
}

/// Sum (or maximum) over the kT threads of a block, the same tree in every
/// block; every thread gets it. `red` holds kT floats.
template <bool Max> __device__ float reduceAll(float v, float *red) {
  const int t = threadIdx.x;
  red[t] = v;
  __syncthreads();
  for (int step = kT / 2; step > 0; step >>= 1) {
    if (t < step)
      red[t] = Max ? fmaxf(red[t], red[t + step]) : red[t] + red[t + step];
    __syncthreads();
  }
  const float r = red[0];
  __syncthreads();
  return r;
}

} // namespace
} // namespace fm_cuda

/// y[r][c] = act(y[r][c] + bias[c]) (bias may be null); act 0 none, 1 GELU
/// (erf), 2 GELU (tanh), 3 quick GELU. Grid (rows), any block.
extern "C" __global__ void __launch_bounds__(256)
    fm_bias_act(float *y, int64_t yStride, int width, const float *bias, int act) {
  float *row = y + int64_t(blockIdx.x) * yStride;
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    float v = row[c];
    if (bias)
      v += bias[c];
    if (act == 1) {
      v = 0.5f * v * (1.0f + fm_cuda::erfApprox(v * 0.70710678118654752f));
    } else if (act == 2) {
      const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
      v = v * fm_cuda::sigmoid(2.0f * u);
    } else if (act == 3) {
      v = v * fm_cuda::sigmoid(1.702f * v);
    }
    row[c] = v;
  }
}

/// y = (x − mean) · (var + eps)^-½ · weight + bias per row (biased
/// variance, the mean first); y may be x. Grid (rows), kT threads.
extern "C" __global__ void __launch_bounds__(64)
    fm_layer_norm(const float *x, int64_t xStride, float *y, int64_t yStride, int width,
                  const float *weight, const float *bias, float eps) {
  __shared__ float red[fm_cuda::kT];
  const float *xr = x + int64_t(blockIdx.x) * xStride;
  float *yr = y + int64_t(blockIdx.x) * yStride;
  const int t = threadIdx.x;
  float s = 0.0f;
  for (int c = t; c < width; c += fm_cuda::kT)
    s += xr[c];
  const float mean = fm_cuda::reduceAll<false>(s, red) / float(width);
  float d2 = 0.0f;
  for (int c = t; c < width; c += fm_cuda::kT) {
    const float d = xr[c] - mean;
    d2 += d * d;
  }
  const float var = fm_cuda::reduceAll<false>(d2, red) / float(width);
  const float rstd = 1.0f / sqrtf(var + eps);
  // Each thread reads its own columns before it writes them (y may be x).
  for (int c = t; c < width; c += fm_cuda::kT)
    yr[c] = (xr[c] - mean) * rstd * weight[c] + bias[c];
}

/// Output row i < R is register i; row R + i is patch i (row-major over the
/// grid of p × p patches of the [channels][H][W] image), flattened as
/// (channel, row, column), times weight [dim][channels·p²]ᵀ + bias (+
/// pos[i]). pos and registers may be null. Grid (R + patches), kT threads;
/// channels·p² at most 1024.
extern "C" __global__ void __launch_bounds__(64)
    fm_patch_embed(const float *image, float *out, int64_t outStride, int channels, int H,
                   int W, int p, int dim, int R, const float *weight, const float *bias,
                   const float *pos, const float *registers) {
  __shared__ float taps[1024];
  const int row = blockIdx.x, t = threadIdx.x;
  float *o = out + int64_t(row) * outStride;
  if (row < R) {
    for (int c = t; c < dim; c += fm_cuda::kT)
      o[c] = registers[int64_t(row) * dim + c];
    return;
  }
  const int i = row - R, gw = W / p;
  const int py = i / gw, px = i % gw, pp = p * p, K = channels * pp;
  for (int k = t; k < K; k += fm_cuda::kT) {
    const int ch = k / pp, rr = (k % pp) / p, cc = k % p;
    taps[k] = image[(int64_t(ch) * H + py * p + rr) * W + px * p + cc];
  }
  __syncthreads();
  for (int c = t; c < dim; c += fm_cuda::kT) {
    const float *wr = weight + int64_t(c) * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
      acc += taps[k] * wr[k];
    acc += bias[c];
    if (pos)
      acc += pos[int64_t(i) * dim + c];
    o[c] = acc;
  }
}

namespace fm_cuda {
namespace {

constexpr int kVitMaxD = 256, kVitMaxS = 256, kVitPer = kVitMaxD / kT;

/// Element `at` of part `part` (1 key, 2 value) of a key: its qkv row, the
/// pad row (a padded token of a window layer with one), or zeros (null).
__device__ __forceinline__ float keyPart(const float *where, int part, int C, int at) {
  return where ? where[int64_t(part) * C + at] : 0.0f;
}

} // namespace
} // namespace fm_cuda

/// A ViT block's bidirectional attention (kernels/vit_attention.h): global,
/// or ViTDet windows of window × window patches over the grid zero-padded
/// at the bottom/right (padded tokens take the `pad` qkv row, or zeros
/// where pad is null, and are not masked), registers first among every
/// window's keys, the decomposed relative-position bias (relH, relW: null
/// for none) on patch × patch scores from the unscaled q, and each
/// register's output the mean of its outputs over all windows, summed in
/// window order. Grid (tokens, heads), kT threads: the threads score kT
/// keys at a time, keep a running maximum and sum (online softmax), and
/// each owns every kT-th output dimension.
extern "C" __global__ void __launch_bounds__(64)
    fm_vit_attention(const float *qkv, int64_t qStride, float *out, int64_t outStride,
                     int R, int gh, int gw, int H, int D, int window, const float *relH,
                     const float *relW, const float *pad, float scale) {
  using namespace fm_cuda;
  __shared__ float qs[kVitMaxD];
  __shared__ float ps[kT];
  __shared__ float red[kT];
  __shared__ float biasH[kVitMaxS], biasW[kVitMaxS];
  __shared__ const float *keyAt[kT]; // key b of the block of kT: its row, or pad / null
  const int tok = blockIdx.x, h = blockIdx.y, t = threadIdx.x, C = H * D, w = window;
  for (int d = t; d < D; d += kT)
    qs[d] = qkv[int64_t(tok) * qStride + int64_t(h) * D + d];

  const int Sh = w > 0 ? w : gh, Sw = w > 0 ? w : gw;
  const int nY = w > 0 ? (gh + w - 1) / w : 1, nX = w > 0 ? (gw + w - 1) / w : 1;
  const bool isRegister = tok < R;
  const bool rel = relH && !isRegister;
  int win0 = 0, win1 = nY * nX, ly = 0, lx = 0;
  if (!isRegister) {
    const int i = tok - R, y = i / gw, x = i % gw;
    ly = w > 0 ? y % w : y;
    lx = w > 0 ? x % w : x;
    win0 = w > 0 ? (y / w) * nX + x / w : 0;
    win1 = win0 + 1;
  }
  __syncthreads(); // qs
  if (rel) {
    // biasH[ky] = q · relH[ly − ky + Sh − 1], biasW[kx] likewise.
    for (int ky = t; ky < Sh; ky += kT) {
      const float *r = relH + int64_t(ly + Sh - 1 - ky) * D;
      float s = 0.0f;
      for (int d = 0; d < D; ++d)
        s += qs[d] * r[d];
      biasH[ky] = s;
    }
    for (int kx = t; kx < Sw; kx += kT) {
      const float *r = relW + int64_t(lx + Sw - 1 - kx) * D;
      float s = 0.0f;
      for (int d = 0; d < D; ++d)
        s += qs[d] * r[d];
      biasW[kx] = s;
    }
    __syncthreads();
  }

  const float lowest = -3.402823466e38f;
  float total[kVitPer];
  for (int i = 0; i < kVitPer; ++i)
    total[i] = 0.0f;
  const int N = R + Sh * Sw;
  const float meanWeight = isRegister && w > 0 ? 1.0f / float(nY * nX) : 1.0f;
  for (int win = win0; win < win1; ++win) {
    const int wy = win / nX, wx = win % nX;
    float m = lowest, l = 0.0f, acc[kVitPer];
    for (int i = 0; i < kVitPer; ++i)
      acc[i] = 0.0f;
    for (int j0 = 0; j0 < N; j0 += kT) {
      const int j = j0 + t;
      float score = lowest;
      if (j < N) {
        const float *where;
        float bias = 0.0f;
        if (j < R) {
          where = qkv + int64_t(j) * qStride;
        } else {
          const int kl = j - R, ky = kl / Sw, kx = kl % Sw;
          const int y = wy * Sh + ky, x = wx * Sw + kx;
          where = y < gh && x < gw ? qkv + int64_t(R + y * gw + x) * qStride : pad;
          if (rel)
            bias = biasH[ky] + biasW[kx];
        }
        keyAt[t] = where;
        float dot = 0.0f;
        for (int d = 0; d < D; ++d)
          dot += qs[d] * keyPart(where, 1, C, h * D + d);
        score = dot * scale + bias;
      }
      const float mNew = fmaxf(m, reduceAll<true>(score, red));
      const float alpha = expf(m - mNew);
      const float pj = j < N ? expf(score - mNew) : 0.0f;
      ps[t] = pj;
      l = l * alpha + reduceAll<false>(pj, red); // its barriers publish ps and keyAt
      const int n = N - j0 < kT ? N - j0 : kT;
      for (int i = 0; i < kVitPer; ++i) {
        const int d = t + i * kT;
        if (d < D) {
          float a = acc[i] * alpha;
          for (int b = 0; b < n; ++b)
            a += ps[b] * keyPart(keyAt[b], 2, C, h * D + d);
          acc[i] = a;
        }
      }
      m = mNew;
      __syncthreads(); // ps and keyAt are rewritten by the next block of keys
    }
    for (int i = 0; i < kVitPer; ++i)
      total[i] += acc[i] / l * meanWeight;
  }
  for (int i = 0; i < kVitPer; ++i) {
    const int d = t + i * kT;
    if (d < D)
      out[int64_t(tok) * outStride + int64_t(h) * D + d] = total[i];
  }
}

/// The taps of a 3x3 convolution with zero padding 1 over a gh × gw grid of
/// tokens: cols[t][i·9 + dy·3 + dx] = x[(ty + dy − 1)·gw + tx + dx − 1][i],
/// 0 outside the grid (the order of weight.reshape(Cout, Cin·9)). Grid
/// (ceil(9·cin / 256), tokens), 256 threads.
extern "C" __global__ void __launch_bounds__(256)
    fm_unfold3x3(const float *x, int64_t xStride, float *cols, int gh, int gw, int cin) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x, t = blockIdx.y, K = cin * 9;
  if (k >= K)
    return;
  const int i = k / 9, tap = k % 9;
  const int sy = t / gw + tap / 3 - 1, sx = t % gw + tap % 3 - 1;
  float v = 0.0f;
  if (sy >= 0 && sy < gh && sx >= 0 && sx < gw)
    v = x[int64_t(sy * gw + sx) * xStride + i];
  cols[int64_t(t) * K + k] = v;
}

/// Output token (oy, ox) of the gOut × gOut grid is the mean of the k × k
/// tokens from (oy·s, ox·s) of the g × g grid, per channel: summed in
/// row-major order, then scaled by 1 / k². Grid (ceil(width / 256), gOut²).
extern "C" __global__ void __launch_bounds__(256)
    fm_avg_pool(const float *x, int64_t xStride, float *y, int64_t yStride, int width,
                int g, int gOut, int s, int k) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x, t = blockIdx.y;
  if (c >= width)
    return;
  const int oy = t / gOut, ox = t % gOut;
  float acc = 0.0f;
  for (int ky = 0; ky < k; ++ky)
    for (int kx = 0; kx < k; ++kx)
      acc += x[int64_t((oy * s + ky) * g + ox * s + kx) * xStride + c];
  y[int64_t(t) * yStride + c] = acc * (1.0f / float(k * k));
}
