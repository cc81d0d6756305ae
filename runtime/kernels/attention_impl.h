// Internal: the attention kernel body.
//
// Its hot loops (q·k scores, the p·V accumulation) come in two forms: plain
// C++ written for the auto-vectorizer (fixed-width partial sums, no serial
// float reductions), used by the generic build, and the same loops over a
// SIMD traits type (simd_avx2.h, simd_avx512.h) for the x86 builds, where
// the auto-vectorizer picked poor shapes (4-wide int8 widening, say).
//
// Every function is a member of a template on a Tag private to the
// instantiating file, so each build has its own symbols and the linker
// never merges a wide-ISA copy into the generic one; for the same reason no
// standard-library templates are used here.
#pragma once

#include "kernels/attention.h"
#include "kernels/exp_approx.h"

#include <cstdint>

namespace fm::kernels::detail {

template <typename Tag> struct AttentionKernel {
  static constexpr int kLanes = Tag::kLanes;
  // Keys per softmax block: the block's scores live on the stack, and its K
  // and V rows stay in L1/L2 while every query head of the group uses them.
  static constexpr int kBlock = 64;
  // Query heads processed together over one pass of the cache.
  static constexpr int kMaxHeads = 16;

  static float widen(float v) { return v; }
  static float widen(int8_t v) { return static_cast<float>(v); }

  static float expNonPositive(float x) {
    return ExpApprox<Tag>::nonPositive(x);
  }

  static float sumLanes(const float *acc) {
    float s = 0.0f;
    for (int l = 0; l < kLanes; ++l)
      s += acc[l];
    return s;
  }

  /// Asks for one row's head slice (D elements) to be brought into L2.
  /// Cache rows are KVH * D apart, usually a page or more, where hardware
  /// prefetchers give up.
  template <typename T> static void prefetchRow(const T *row, int64_t D) {
    const char *bytes = reinterpret_cast<const char *>(row);
    for (int64_t offset = 0; offset < D * static_cast<int64_t>(sizeof(T));
         offset += 64)
      __builtin_prefetch(bytes + offset, 0, 2);
  }

  /// p[b] = scale · q·k_b for n keys k_b = k + b · rowStride.
  template <typename T>
  static void scores(const float *q, const T *k, int64_t rowStride, int n,
                     int64_t D, float scale, float *p) {
    if constexpr (Tag::kSimd)
      scoresSimd(q, k, rowStride, n, D, scale, p);
    else
      scoresPlain(q, k, rowStride, n, D, scale, p);
  }

  /// out += sum_b p[b] · v row b for n rows v + b · rowStride.
  template <typename T>
  static void accumulateV(float *out, const float *p, const T *v,
                          int64_t rowStride, int n, int64_t D) {
    if constexpr (Tag::kSimd)
      accumulateVSimd(out, p, v, rowStride, n, D);
    else
      accumulateVPlain(out, p, v, rowStride, n, D);
  }

  // Four keys per pass over q.
  template <typename T>
  static void scoresPlain(const float *__restrict q, const T *__restrict k,
                          int64_t rowStride, int n, int64_t D, float scale,
                          float *__restrict p) {
    int b = 0;
    for (; b + 4 <= n; b += 4) {
      const T *k0 = k + b * rowStride, *k1 = k0 + rowStride,
              *k2 = k1 + rowStride, *k3 = k2 + rowStride;
      float a0[kLanes] = {}, a1[kLanes] = {}, a2[kLanes] = {}, a3[kLanes] = {};
      int64_t d = 0;
      for (; d + kLanes <= D; d += kLanes)
        for (int l = 0; l < kLanes; ++l) {
          float x = q[d + l];
          a0[l] += x * widen(k0[d + l]);
          a1[l] += x * widen(k1[d + l]);
          a2[l] += x * widen(k2[d + l]);
          a3[l] += x * widen(k3[d + l]);
        }
      float s0 = sumLanes(a0), s1 = sumLanes(a1), s2 = sumLanes(a2),
            s3 = sumLanes(a3);
      for (; d < D; ++d) {
        s0 += q[d] * widen(k0[d]);
        s1 += q[d] * widen(k1[d]);
        s2 += q[d] * widen(k2[d]);
        s3 += q[d] * widen(k3[d]);
      }
      p[b] = s0 * scale;
      p[b + 1] = s1 * scale;
      p[b + 2] = s2 * scale;
      p[b + 3] = s3 * scale;
    }
    for (; b < n; ++b) {
      const T *kb = k + b * rowStride;
      float a[kLanes] = {};
      int64_t d = 0;
      for (; d + kLanes <= D; d += kLanes)
        for (int l = 0; l < kLanes; ++l)
          a[l] += q[d + l] * widen(kb[d + l]);
      float s = sumLanes(a);
      for (; d < D; ++d)
        s += q[d] * widen(kb[d]);
      p[b] = s * scale;
    }
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
    float s = sumLanes(acc);
    for (; b < n; ++b)
      s += p[b];
    return s;
  }

  static void scaleRow(float *out, int64_t D, float c) {
    for (int64_t d = 0; d < D; ++d)
      out[d] *= c;
  }

  // Four rows per pass over out.
  template <typename T>
  static void accumulateVPlain(float *__restrict out, const float *p,
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

  // Four keys per pass over q, one register of partial sums per key.
  template <typename T>
  static void scoresSimd(const float *q, const T *k, int64_t rowStride, int n,
                         int64_t D, float scale, float *p) {
    using S = typename Tag::Simd;
    using Reg = typename S::Reg;
    constexpr int L = S::kLanes;
    const int rest = static_cast<int>(D % L);
    const int64_t full = D - rest;
    int b = 0;
    for (; b + 4 <= n; b += 4) {
      const T *k0 = k + b * rowStride, *k1 = k0 + rowStride,
              *k2 = k1 + rowStride, *k3 = k2 + rowStride;
      Reg acc[4] = {S::zero(), S::zero(), S::zero(), S::zero()};
      for (int64_t d = 0; d < full; d += L) {
        Reg x = S::load(q + d);
        acc[0] = S::fma(x, S::load(k0 + d), acc[0]);
        acc[1] = S::fma(x, S::load(k1 + d), acc[1]);
        acc[2] = S::fma(x, S::load(k2 + d), acc[2]);
        acc[3] = S::fma(x, S::load(k3 + d), acc[3]);
      }
      if (rest) {
        Reg x = S::loadPartial(q + full, rest);
        acc[0] = S::fma(x, S::loadPartial(k0 + full, rest), acc[0]);
        acc[1] = S::fma(x, S::loadPartial(k1 + full, rest), acc[1]);
        acc[2] = S::fma(x, S::loadPartial(k2 + full, rest), acc[2]);
        acc[3] = S::fma(x, S::loadPartial(k3 + full, rest), acc[3]);
      }
      float sums[4];
      S::sum4(acc, sums);
      for (int i = 0; i < 4; ++i)
        p[b + i] = sums[i] * scale;
    }
    for (; b < n; ++b) {
      const T *kb = k + b * rowStride;
      Reg acc = S::zero();
      for (int64_t d = 0; d < full; d += L)
        acc = S::fma(S::load(q + d), S::load(kb + d), acc);
      if (rest)
        acc = S::fma(S::loadPartial(q + full, rest),
                     S::loadPartial(kb + full, rest), acc);
      p[b] = S::sum(acc) * scale;
    }
  }

  // Four rows per pass over out.
  template <typename T>
  static void accumulateVSimd(float *out, const float *p, const T *v,
                              int64_t rowStride, int n, int64_t D) {
    using S = typename Tag::Simd;
    using Reg = typename S::Reg;
    constexpr int L = S::kLanes;
    const int rest = static_cast<int>(D % L);
    const int64_t full = D - rest;
    int b = 0;
    for (; b + 4 <= n; b += 4) {
      const T *v0 = v + b * rowStride, *v1 = v0 + rowStride,
              *v2 = v1 + rowStride, *v3 = v2 + rowStride;
      const Reg p0 = S::broadcast(p[b]), p1 = S::broadcast(p[b + 1]),
                p2 = S::broadcast(p[b + 2]), p3 = S::broadcast(p[b + 3]);
      for (int64_t d = 0; d < full; d += L) {
        Reg o = S::load(out + d);
        o = S::fma(p0, S::load(v0 + d), o);
        o = S::fma(p1, S::load(v1 + d), o);
        o = S::fma(p2, S::load(v2 + d), o);
        o = S::fma(p3, S::load(v3 + d), o);
        S::store(out + d, o);
      }
      if (rest) {
        Reg o = S::loadPartial(out + full, rest);
        o = S::fma(p0, S::loadPartial(v0 + full, rest), o);
        o = S::fma(p1, S::loadPartial(v1 + full, rest), o);
        o = S::fma(p2, S::loadPartial(v2 + full, rest), o);
        o = S::fma(p3, S::loadPartial(v3 + full, rest), o);
        S::storePartial(out + full, o, rest);
      }
    }
    for (; b < n; ++b) {
      const T *vb = v + b * rowStride;
      const Reg pb = S::broadcast(p[b]);
      for (int64_t d = 0; d < full; d += L)
        S::store(out + d, S::fma(pb, S::load(vb + d), S::load(out + d)));
      if (rest)
        S::storePartial(out + full,
                        S::fma(pb, S::loadPartial(vb + full, rest),
                               S::loadPartial(out + full, rest)),
                        rest);
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
      // The next block's rows, fetched while this one is computed.
      const int64_t nextRows =
          jEnd - (j0 + kBlock) < kBlock ? jEnd - (j0 + kBlock) : kBlock;
      for (int64_t b = 0; b < nextRows; ++b) {
        prefetchRow(kBlockRows + (kBlock + b) * rowStride, D);
        prefetchRow(vBlockRows + (kBlock + b) * rowStride, D);
      }
      for (int hh = 0; hh < numHeads; ++hh) {
        const float *q = a.q + (s * a.H + h0 + hh) * D;
        float *out = a.out + (s * a.H + h0 + hh) * D;
        scores(q, kBlockRows, rowStride, n, D, scoreScale, p);
        float blockMax = maxOf(p, n);
        float newMax = runningMax[hh] < blockMax ? blockMax : runningMax[hh];
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
