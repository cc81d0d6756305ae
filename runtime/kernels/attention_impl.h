// Internal: the attention kernel body, plain C++ written for the
// auto-vectorizer (fixed-width partial sums, no serial float reductions).
//
// attention.cpp instantiates it as the generic path; an ISA file may
// instantiate it again under its own -m flags with its own Tag type. Every
// function is a member of a template on Tag, so each instantiation has its
// own symbols and the linker never merges a wide-ISA copy into the generic
// one; for the same reason no standard-library templates are used here.
#pragma once

#include "kernels/attention.h"

#include <cstdint>
#include <cstring>

namespace fm::kernels::detail {

template <typename Tag> struct AttentionKernel {
  // Partial sums per reduction: one AVX-512 register, two AVX2 ones.
  static constexpr int kLanes = 16;
  // Keys per softmax block: the block's scores live on the stack, and its K
  // and V rows stay in L1/L2 while every query head of the group uses them.
  static constexpr int kBlock = 64;
  // Query heads processed together over one pass of the cache.
  static constexpr int kMaxHeads = 16;

  static float widen(float v) { return v; }
  static float widen(int8_t v) { return static_cast<float>(v); }

  /// e^x for x <= 0 (softmax arguments are never positive), to ~2 ulp;
  /// 0 below -87.3 (where e^x leaves the normal floats) and for -inf.
  static float expNonPositive(float x) {
    bool underflow = !(x >= -87.3f);
    x = underflow ? 0.0f : x;
    // e^x = 2^n · e^r, n = round(x / ln 2), |r| <= ln 2 / 2. Adding and
    // subtracting 1.5 · 2^23 rounds to an integer without a libm call.
    constexpr float kRound = 12582912.0f;
    float n = (x * 1.44269504088896341f + kRound) - kRound;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    return underflow ? 0.0f : p * scale;
  }

  template <typename T>
  static float dot(const float *__restrict q, const T *__restrict k,
                   int64_t D) {
    float acc[kLanes] = {};
    int64_t d = 0;
    for (; d + kLanes <= D; d += kLanes)
      for (int l = 0; l < kLanes; ++l)
        acc[l] += q[d + l] * widen(k[d + l]);
    float s = 0.0f;
    for (; d < D; ++d)
      s += q[d] * widen(k[d]);
    for (int l = 0; l < kLanes; ++l)
      s += acc[l];
    return s;
  }

  static float maxOf(const float *p, int n) {
    float acc[kLanes];
    for (int l = 0; l < kLanes; ++l)
      acc[l] = p[0];
    int b = 0;
    for (; b + kLanes <= n; b += kLanes)
      for (int l = 0; l < kLanes; ++l)
        acc[l] = acc[l] < p[b + l] ? p[b + l] : acc[l];
    float m = p[0];
    for (; b < n; ++b)
      m = m < p[b] ? p[b] : m;
    for (int l = 0; l < kLanes; ++l)
      m = m < acc[l] ? acc[l] : m;
    return m;
  }

  /// p[b] = e^(p[b] - max), returns the sum.
  static float expAndSum(float *p, int n, float max) {
    for (int b = 0; b < n; ++b)
      p[b] = expNonPositive(p[b] - max);
    float acc[kLanes] = {};
    int b = 0;
    for (; b + kLanes <= n; b += kLanes)
      for (int l = 0; l < kLanes; ++l)
        acc[l] += p[b + l];
    float s = 0.0f;
    for (; b < n; ++b)
      s += p[b];
    for (int l = 0; l < kLanes; ++l)
      s += acc[l];
    return s;
  }

  static void scaleRow(float *out, int64_t D, float c) {
    for (int64_t d = 0; d < D; ++d)
      out[d] *= c;
  }

  /// out += sum_b p[b] · v row b; four rows per pass over out.
  template <typename T>
  static void accumulateV(float *__restrict out, const float *p,
                          const T *__restrict v, int64_t rowStride, int n,
                          int64_t D) {
    int b = 0;
    for (; b + 4 <= n; b += 4) {
      const T *v0 = v + b * rowStride, *v1 = v0 + rowStride,
              *v2 = v1 + rowStride, *v3 = v2 + rowStride;
      float p0 = p[b], p1 = p[b + 1], p2 = p[b + 2], p3 = p[b + 3];
      for (int64_t d = 0; d < D; ++d)
        out[d] += p0 * widen(v0[d]) + p1 * widen(v1[d]) + p2 * widen(v2[d]) +
                  p3 * widen(v3[d]);
    }
    for (; b < n; ++b) {
      const T *vb = v + b * rowStride;
      float pb = p[b];
      for (int64_t d = 0; d < D; ++d)
        out[d] += pb * widen(vb[d]);
    }
  }

  /// Query row s, heads h0 .. h0 + numHeads - 1, which share one KV head.
  template <typename T>
  static void heads(const AttentionArgs &a, int64_t s, int64_t h0,
                    int numHeads) {
    const int64_t D = a.D;
    const int64_t i = a.pos0 + s;
    const int64_t jBegin =
        a.window > 0 && i - a.window + 1 > 0 ? i - a.window + 1 : 0;
    const int64_t jEnd = i + 1;
    const int64_t rowStride = a.KVH * D;
    const int64_t g = h0 / (a.H / a.KVH);
    const T *kBase = static_cast<const T *>(a.k) + g * D;
    const T *vBase = static_cast<const T *>(a.v) + g * D;
    const float scoreScale = a.int8 ? a.scale * a.kScale : a.scale;
    const float valueScale = a.int8 ? a.vScale : 1.0f;

    float runningMax[kMaxHeads], runningSum[kMaxHeads];
    for (int hh = 0; hh < numHeads; ++hh) {
      runningMax[hh] = -__builtin_inff();
      runningSum[hh] = 0.0f;
      float *out = a.out + (s * a.H + h0 + hh) * D;
      for (int64_t d = 0; d < D; ++d)
        out[d] = 0.0f;
    }

    float p[kBlock];
    for (int64_t j0 = jBegin; j0 < jEnd; j0 += kBlock) {
      const int n = static_cast<int>(jEnd - j0 < kBlock ? jEnd - j0 : kBlock);
      const T *kBlockRows = kBase + j0 * rowStride;
      const T *vBlockRows = vBase + j0 * rowStride;
      for (int hh = 0; hh < numHeads; ++hh) {
        const float *q = a.q + (s * a.H + h0 + hh) * D;
        float *out = a.out + (s * a.H + h0 + hh) * D;
        for (int b = 0; b < n; ++b)
          p[b] = dot(q, kBlockRows + b * rowStride, D) * scoreScale;
        float blockMax = maxOf(p, n);
        float newMax =
            runningMax[hh] < blockMax ? blockMax : runningMax[hh];
        // Rescales what was accumulated under the old maximum (nothing,
        // on the first block: e^-inf = 0).
        float correction = expNonPositive(runningMax[hh] - newMax);
        float blockSum = expAndSum(p, n, newMax);
        runningSum[hh] = runningSum[hh] * correction + blockSum;
        runningMax[hh] = newMax;
        if (correction != 1.0f)
          scaleRow(out, D, correction);
        if (valueScale != 1.0f)
          for (int b = 0; b < n; ++b)
            p[b] *= valueScale;
        accumulateV(out, p, vBlockRows, rowStride, n, D);
      }
    }

    for (int hh = 0; hh < numHeads; ++hh)
      scaleRow(a.out + (s * a.H + h0 + hh) * D, D, 1.0f / runningSum[hh]);
  }

  /// Query row of work item t: items are (row, head) pairs with rows taken
  /// first, last, second, second to last, ..., so that any contiguous range
  /// of items has about the same number of keys to visit under the causal
  /// mask.
  static int64_t rowOfItem(int64_t t, int64_t S) {
    return t % 2 == 0 ? t / 2 : S - 1 - t / 2;
  }

  /// Work items [begin, end) of S * H; consecutive heads of one KV group
  /// are processed together so that the group reads the cache once.
  static void range(const AttentionArgs &a, int64_t begin, int64_t end) {
    const int64_t group = a.H / a.KVH;
    int64_t t = begin;
    while (t < end) {
      const int64_t s = rowOfItem(t / a.H, a.S);
      const int64_t h = t % a.H;
      // Heads up to the end of h's group, the range, or kMaxHeads.
      int64_t stop = (h / group + 1) * group;
      if (stop - h > end - t)
        stop = h + (end - t);
      if (stop - h > kMaxHeads)
        stop = h + kMaxHeads;
      const int numHeads = static_cast<int>(stop - h);
      if (a.int8)
        heads<int8_t>(a, s, h, numHeads);
      else
        heads<float>(a, s, h, numHeads);
      t += numHeads;
    }
  }
};

} // namespace fm::kernels::detail
