// Internal: LayerNorm and the GELU family as plain C++ loops written for the
// auto-vectorizer (fixed-width partial sums instead of serial float
// reductions, selects instead of branches), compiled once per instruction
// set by pointwise.cpp, pointwise_avx2.cpp and pointwise_avx512.cpp.
//
// Every function is a member of a template on a Tag private to the
// instantiating file, so each build has its own symbols and the linker never
// merges a wide-ISA copy into the generic one (see exp_approx.h); for the
// same reason it calls builtins, not <cmath>'s inline wrappers.
#pragma once

#include "kernels/exp_approx.h"
#include "kernels/pointwise_isa.h"

#include <cstdint>

namespace fm::kernels::detail {

template <typename Tag> struct PointwiseKernel {
  static constexpr int kLanes = Tag::kLanes;

  static float sumLanes(const float *acc) {
    float s = 0.0f;
    for (int l = 0; l < kLanes; ++l)
      s += acc[l];
    return s;
  }

  static float sum(const float *__restrict x, int64_t n) {
    float acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int l = 0; l < kLanes; ++l)
        acc[l] += x[i + l];
    float s = sumLanes(acc);
    for (; i < n; ++i)
      s += x[i];
    return s;
  }

  static float sumSquaredDeviation(const float *__restrict x, int64_t n,
                                   float mean) {
    float acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        float d = x[i + l] - mean;
        acc[l] += d * d;
      }
    float s = sumLanes(acc);
    for (; i < n; ++i) {
      float d = x[i] - mean;
      s += d * d;
    }
    return s;
  }

  static void layerNormRows(const float *x, int64_t r0, int64_t r1, int64_t C,
                            const float *__restrict weight,
                            const float *__restrict bias, float eps, float *y) {
    for (int64_t r = r0; r < r1; ++r) {
      const float *xr = x + r * C;
      float *yr = y + r * C;
      // Two passes: the mean first, then the deviations from it (the
      // one-pass E[x²] − E[x]² cancels badly when |mean| >> std).
      const float mean = sum(xr, C) / static_cast<float>(C);
      const float var = sumSquaredDeviation(xr, C, mean) / static_cast<float>(C);
      const float rstd = 1.0f / __builtin_sqrtf(var + eps);
      for (int64_t c = 0; c < C; ++c)
        yr[c] = (xr[c] - mean) * rstd * weight[c] + bias[c];
    }
  }

  /// σ(z) = 1 / (1 + e^-z), from e^-|z| so that it never overflows and
  /// keeps its relative accuracy in both tails.
  static float sigmoid(float z) {
    const float e = ExpApprox<Tag>::nonPositive(-__builtin_fabsf(z));
    const float inv = 1.0f / (1.0f + e);
    return z >= 0.0f ? inv : e * inv;
  }

  /// erf(x) within 5e-7 absolute: the odd/even rational approximation on
  /// [-4, 4] that XLA and Eigen use (outside, erf is ±1 in f32).
  static float erf(float x) {
    x = x < -4.0f ? -4.0f : (x > 4.0f ? 4.0f : x);
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

  static void gelu(float *__restrict x, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      x[i] = 0.5f * x[i] * (1.0f + erf(x[i] * 0.70710678118654752f));
  }

  // ½(1 + tanh(u)) = σ(2u): one exp, no cancellation near u = 0.
  static void geluTanh(float *__restrict x, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float v = x[i];
      const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
      x[i] = v * sigmoid(2.0f * u);
    }
  }

  static void quickGelu(float *__restrict x, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      x[i] = x[i] * sigmoid(1.702f * x[i]);
  }

  static void activate(Activation act, float *x, int64_t i0, int64_t i1) {
    switch (act) {
    case Activation::Gelu:
      gelu(x, i0, i1);
      return;
    case Activation::GeluTanh:
      geluTanh(x, i0, i1);
      return;
    case Activation::QuickGelu:
      quickGelu(x, i0, i1);
      return;
    }
  }

  static constexpr PointwiseIsa table() {
    return PointwiseIsa{&layerNormRows, &activate};
  }
};

} // namespace fm::kernels::detail
