// Patch embedding, 3x3 convolution and average pooling: unfolds in
// parallel, GEMMs on the packed kernel (gemm.h).
#include "kernels/conv.h"

#include "kernels/gemm.h"
#include "base/ThreadPool.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fm::kernels {
namespace {

// Below this many copied or averaged floats a step runs on the calling
// thread.
constexpr int64_t kMinParallelFloats = 1 << 15;

void forRange(int64_t n, int64_t floatsEach, fm::rt::ThreadPool *pool,
              fm::rt::RangeFn fn) {
  if (pool && pool->numThreads() > 1 && n > 1 && n * floatsEach >= kMinParallelFloats)
    pool->parallelFor(n, fn);
  else
    fn(0, n);
}

/// The calling thread's unfold buffer, kept between calls so that a
/// repeated encode allocates once.
float *unfoldBuffer(int64_t floats) {
  thread_local std::vector<float> buffer;
  if (int64_t(buffer.size()) < floats)
    buffer.resize(static_cast<size_t>(floats));
  return buffer.data();
}

} // namespace

void patchEmbed(const float *image, int64_t channels, int64_t H, int64_t W,
                int64_t p, const float *weight, int64_t C, const float *bias,
                const float *pos, float *out, fm::rt::ThreadPool *pool) {
  assert(image && weight && out && channels > 0 && p > 0 && C > 0);
  const int64_t gh = H / p, gw = W / p, patches = gh * gw;
  if (patches <= 0)
    return;
  // Row t holds patch t flattened as (channel, row, column): the order of
  // weight.reshape(C, channels·p·p).
  const int64_t K = channels * p * p;
  float *cols = unfoldBuffer(patches * K);
  forRange(patches, K, pool, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t py = t / gw, px = t % gw;
      float *row = cols + t * K;
      for (int64_t ch = 0; ch < channels; ++ch)
        for (int64_t r = 0; r < p; ++r) {
          std::memcpy(row, image + (ch * H + py * p + r) * W + px * p,
                      static_cast<size_t>(p) * sizeof(float));
          row += p;
        }
    }
  });
  if (pos)
    std::memcpy(out, pos, static_cast<size_t>(patches * C) * sizeof(float));
  gemmF32(cols, patches, K, weight, C, bias, out, pos != nullptr, pool);
}

void conv3x3(const float *x, int64_t gh, int64_t gw, int64_t Cin,
             const float *weight, int64_t Cout, const float *bias, float *y,
             fm::rt::ThreadPool *pool) {
  assert(x && weight && y && Cin > 0 && Cout > 0);
  const int64_t tokens = gh * gw;
  if (tokens <= 0)
    return;
  const int64_t K = Cin * 9;
  float *cols = unfoldBuffer(tokens * K);
  conv3x3Unfold(x, gh, gw, Cin, cols, pool);
  gemmF32(cols, tokens, K, weight, Cout, bias, y, false, pool);
}

void conv3x3Unfold(const float *x, int64_t gh, int64_t gw, int64_t Cin,
                   float *cols, fm::rt::ThreadPool *pool) {
  // Row t: for each input channel i the 3 x 3 taps around t, row-major, 0
  // outside the grid: the order of weight.reshape(Cout, Cin·9).
  const int64_t tokens = gh * gw, K = Cin * 9;
  forRange(tokens, K, pool, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t ty = t / gw, tx = t % gw;
      float *row = cols + t * K;
      for (int64_t dy = 0; dy < 3; ++dy)
        for (int64_t dx = 0; dx < 3; ++dx) {
          const int64_t sy = ty + dy - 1, sx = tx + dx - 1;
          float *dst = row + dy * 3 + dx;
          if (sy < 0 || sy >= gh || sx < 0 || sx >= gw) {
            for (int64_t i = 0; i < Cin; ++i)
              dst[i * 9] = 0.0f;
            continue;
          }
          const float *src = x + (sy * gw + sx) * Cin;
          for (int64_t i = 0; i < Cin; ++i)
            dst[i * 9] = src[i];
        }
    }
  });
}

void adapterAvgPool(const float *x, int64_t g, int64_t D, int64_t gOut,
                    float *y, fm::rt::ThreadPool *pool) {
  assert(x && y && D > 0 && gOut >= 1 && gOut <= g && "adapterAvgPool: bad grid");
  const int64_t s = adapterPoolStride(g, gOut), k = adapterPoolKernel(g, gOut);
  const float inv = 1.0f / static_cast<float>(k * k);
  forRange(gOut * gOut, k * k * D, pool, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t oy = t / gOut, ox = t % gOut;
      float *out = y + t * D;
      for (int64_t d = 0; d < D; ++d)
        out[d] = 0.0f;
      for (int64_t ky = 0; ky < k; ++ky)
        for (int64_t kx = 0; kx < k; ++kx) {
          const float *in = x + ((oy * s + ky) * g + ox * s + kx) * D;
          for (int64_t d = 0; d < D; ++d)
            out[d] += in[d];
        }
      for (int64_t d = 0; d < D; ++d)
        out[d] *= inv;
    }
  });
}

} // namespace fm::kernels
