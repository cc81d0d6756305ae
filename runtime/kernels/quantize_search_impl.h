// Internal: the scale-search primitives of quantize_search.h written once in
// plain C++ over arrays of candidate lanes, for the auto-vectorizer; each
// instruction set's file instantiates them with its own flags (always with
// -ffp-contract=off: see quantize_search.h). Include only from
// quantize*.cpp.
#pragma once

#include "kernels/quantize_search.h"

#if defined(FM_QUANTIZE_X86)
#include "kernels/quantize_search_x86.h"
#else
namespace fm::kernels::qsearch::x86 {
// Never called: Tag::kX86 is false in builds without AVX2.
inline float balancedRefit(const Group &, float s) { return s; }
inline void finish(const Group &, bool, float, float, uint8_t *, double *,
                   double *) {}
} // namespace fm::kernels::qsearch::x86
#endif

namespace fm::kernels::qsearch {

// Each function is a member of a template on a Tag private to the
// instantiating file, so that every build keeps its own symbols (the
// linker never merges an AVX-512 copy into the generic one).
template <typename Tag> struct Search {
  // Clamps to the grid and rounds half up, as (float)(int)(v + 0.5f):
  // v > 0 ? v : 0 maps NaN to 0 like std::fmax(v, 0) did, and is one
  // vector max.
  static float quantOf(float v, float qmax) {
    v = v > 0.0f ? v : 0.0f;
    v = v < qmax ? v : qmax;
    // The same value either way (0.5 <= v + 0.5 < 256); SSE4.1 and later
    // truncate in one instruction.
    if constexpr (Tag::kX86)
      return __builtin_truncf(v + 0.5f);
    return static_cast<float>(static_cast<int>(v + 0.5f));
  }

  // W candidates (W = vector lanes); the per-candidate arithmetic is that
  // of balancedError in quantize_reference.cpp.
  template <int W>
  static void balancedBatch(const Group &g, const float *s, float *err) {
    float inv[W], sv[W];
    for (int c = 0; c < W; ++c) {
      sv[c] = s[c];
      inv[c] = 1.0f / s[c]; // inf where s is 0: clamped, then ignored
    }
    const float center = g.center, qmax = g.qmax;
    float acc[kSumLanes][W] = {};
    for (int k = 0; k < g.n; k += kSumLanes)
      for (int l = 0; l < kSumLanes; ++l) {
        const float w = g.w[k + l];
        for (int c = 0; c < W; ++c) {
          const float q = quantOf(w * inv[c] + center, qmax);
          const float d = w - (q - center) * sv[c];
          acc[l][c] += d * d;
        }
      }
    for (int c = 0; c < W; ++c) {
      float e = 0.0f;
      for (int l = 0; l < kSumLanes; ++l)
        e += acc[l][c];
      err[c] = s[c] > 0.0f ? e : g.sqSum;
    }
  }

  // affineError in quantize_reference.cpp. Where s is 0, inv = 0 makes
  // q = 0 and the value m, as the reference's separate (w - m)^2 loop.
  template <int W>
  static void affineBatch(const Group &g, const float *s, const float *m,
                          float *err) {
    float inv[W], sv[W], mv[W];
    for (int c = 0; c < W; ++c) {
      sv[c] = s[c];
      mv[c] = m[c];
      inv[c] = s[c] > 0.0f ? 1.0f / s[c] : 0.0f;
    }
    const float qmax = g.qmax;
    float acc[kSumLanes][W] = {};
    for (int k = 0; k < g.n; k += kSumLanes)
      for (int l = 0; l < kSumLanes; ++l) {
        const float w = g.w[k + l];
        for (int c = 0; c < W; ++c) {
          // The reference adds an offset of +0.0 here, which only turns a
          // -0 into +0: the same after the clamp.
          const float q = quantOf((w - mv[c]) * inv[c], qmax);
          const float d = w - (q * sv[c] + mv[c]);
          acc[l][c] += d * d;
        }
      }
    for (int c = 0; c < W; ++c) {
      float e = 0.0f;
      for (int l = 0; l < kSumLanes; ++l)
        e += acc[l][c];
      err[c] = e;
    }
  }

  // Pads the batch to W lanes with copies of the last candidate.
  template <int W>
  static void balancedPadded(const Group &g, const float *s, int count,
                             float *err) {
    float sp[W], ep[W];
    for (int c = 0; c < W; ++c)
      sp[c] = s[c < count ? c : count - 1];
    balancedBatch<W>(g, sp, ep);
    for (int c = 0; c < count; ++c)
      err[c] = ep[c];
  }

  template <int W>
  static void affinePadded(const Group &g, const float *s, const float *m,
                           int count, float *err) {
    float sp[W], mp[W], ep[W];
    for (int c = 0; c < W; ++c) {
      sp[c] = s[c < count ? c : count - 1];
      mp[c] = m[c < count ? c : count - 1];
    }
    affineBatch<W>(g, sp, mp, ep);
    for (int c = 0; c < count; ++c)
      err[c] = ep[c];
  }

  // A batch costs the same however many of its lanes are used. With 16
  // lanes (Tag::kWide), fewer than kFewest candidates go one at a time
  // with the weights in the lanes (x86::balancedError16), else batches of
  // 16; otherwise batches of 8.
  static constexpr int kFewest = 12;

  static void balancedErrors(const Group &g, const float *s, int count,
                             float *err) {
#if defined(__AVX512F__)
    if (Tag::kWide && count < kFewest) {
      for (int c = 0; c < count; ++c)
        err[c] = x86::balancedError16(g, s[c]);
      return;
    }
#endif
    if (Tag::kWide && count > 8)
      balancedPadded<16>(g, s, count, err);
    else if (count > 8)
      for (int c = 0; c < count; c += 8)
        balancedPadded<8>(g, s + c, count - c < 8 ? count - c : 8, err + c);
    else
      balancedPadded<8>(g, s, count, err);
  }

  static void affineErrors(const Group &g, const float *s, const float *m,
                           int count, float *err) {
#if defined(__AVX512F__)
    if (Tag::kWide && count < kFewest) {
      for (int c = 0; c < count; ++c)
        err[c] = x86::affineError16(g, s[c], m[c]);
      return;
    }
#endif
    if (Tag::kWide && count > 8)
      affinePadded<16>(g, s, m, count, err);
    else if (count > 8)
      for (int c = 0; c < count; c += 8)
        affinePadded<8>(g, s + c, m + c, count - c < 8 ? count - c : 8,
                        err + c);
    else
      affinePadded<8>(g, s, m, count, err);
  }

  // balancedRefit in quantize_reference.cpp (one candidate, the weights in
  // the lanes: kSumLanes partial sums of num and den).
  static float balancedRefit(const Group &g, float s) {
    if constexpr (Tag::kX86)
      return x86::balancedRefit(g, s);
    const float inv = 1.0f / s;
    float num[kSumLanes] = {}, den[kSumLanes] = {};
    for (int k = 0; k < g.n; k += kSumLanes)
      for (int l = 0; l < kSumLanes; ++l) {
        const float w = g.w[k + l];
        const float lv = quantOf(w * inv + g.center, g.qmax) - g.center;
        num[l] += w * lv;
        den[l] += lv * lv;
      }
    float n = 0.0f, d = 0.0f;
    for (int l = 0; l < kSumLanes; ++l) {
      n += num[l];
      d += den[l];
    }
    return d > 0.0f ? n / d : s;
  }

  static void toHalfAndBack(float *v, int count) {
    Tag::toHalfAndBack(v, count);
  }

  // The quants as the reference's final pass assigns them (balanced: the
  // middle quant when s is 0; affine: 0), the error of their values.
  static void finish(const Group &g, bool affine, float s, float m,
                     uint8_t *q, double *sqError, double *sqSum) {
    if constexpr (Tag::kX86)
      return x86::finish(g, affine, s, m, q, sqError, sqSum);
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    const float center = g.center, qmax = g.qmax;
    const float zeroQuant = affine ? 0.0f : (g.qmax + 1.0f) * 0.5f;
    const bool any = s > 0.0f;
    double err[kSumLanes] = {}, sq[kSumLanes] = {};
    for (int k = 0; k < g.n; k += kSumLanes)
      for (int l = 0; l < kSumLanes; ++l) {
        const float w = g.w[k + l];
        float qf, value;
        if (affine) {
          qf = any ? quantOf((w - m) * inv, qmax) : zeroQuant;
          value = qf * s + m;
        } else {
          qf = any ? quantOf(w * inv + center, qmax) : zeroQuant;
          value = (qf - center) * s;
        }
        q[k + l] = static_cast<uint8_t>(static_cast<int>(qf));
        const double d = static_cast<double>(w) - value;
        err[l] += d * d;
        sq[l] += static_cast<double>(w) * w;
      }
    double e = 0.0, t = 0.0;
    for (int l = 0; l < kSumLanes; ++l) {
      e += err[l];
      t += sq[l];
    }
    *sqError = e;
    *sqSum = t;
  }

  static constexpr SearchIsa kTable = {&balancedErrors, &affineErrors,
                                       &balancedRefit, &toHalfAndBack,
                                       &finish};
};

} // namespace fm::kernels::qsearch
