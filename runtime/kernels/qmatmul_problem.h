// Test support (no GoogleTest, so that the AArch64 check under qemu can use
// it too): a packed qmatmul problem with double-precision references and the
// rounding bounds of each activation mode. Used by qmatmul_test.cpp and
// test/unit/neon/neon_check.cpp.
#pragma once

#include "kernels/qmatmul.h"
#include "kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace fm::kernels::testing {

/// Every (bits, group, grid) the packed formats allow.
inline std::vector<QuantFormat> allQuantFormats() {
  std::vector<QuantFormat> out;
  for (int bits : {2, 4, 8})
    for (int group : {32, 64, 128})
      for (QuantGrid grid : {QuantGrid::Balanced, QuantGrid::Affine})
        out.push_back({bits, group, grid});
  return out;
}

/// "q2g32b", "q4g64a", ...
inline std::string formatName(QuantFormat f) {
  return "q" + std::to_string(f.bits) + "g" + std::to_string(f.group) +
         (f.grid == QuantGrid::Balanced ? "b" : "a");
}

/// The factor of QMatmulProblem::int8Err that bounds the error of `act`
/// against f32 x: int8 rounds each input by half a step of max|x| / 127 of
/// its block; int8x2 by the second digit's half step, or its clamp at +-127
/// steps (2 / 256 of that); int11 by the half step of 1 / 8 (its second
/// digit stays within +-4: no clamp); f32 only by f32 rounding.
inline double activationBoundScale(QActivations act) {
  switch (act) {
  case QActivations::Int8:
    return 1.0;
  case QActivations::Int8x2:
    return 2.0 / 256.0;
  case QActivations::Int11:
  case QActivations::Int11Fast: // Int11 or finer (Int8x2)
    return 1.0 / 8.0;
  case QActivations::F32:
    return 0.0;
  }
  return 1.0;
}

/// A packed weight (N x K, normal values), x (M x K, uniform, with some
/// all-zero blocks and some large outliers), an initial y, and
/// double-precision references.
struct QMatmulProblem {
  QuantFormat f;
  int64_t M, K, N;
  std::vector<uint8_t> w;
  std::vector<float> x, y0, wdq;
  std::vector<double> ref;     // x · dequant(w)ᵀ
  std::vector<double> mag;     // sum_k |w_k x_k|
  std::vector<double> int8Err; // sum_k |w_k| * dx_k / 2: int8 x rounding bound

  QMatmulProblem(QuantFormat fmt, int64_t m, int64_t k, int64_t n,
                 uint32_t seed)
      : f(fmt), M(m), K(k), N(n) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> wf(N * K);
    for (float &v : wf)
      v = 0.05f * normal(rng) + 0.01f;
    const size_t rowBytes = packedRowBytes(f, K);
    w.resize(N * rowBytes);
    quantizeRows(wf.data(), N, K, f, w.data());
    wdq.resize(N * K);
    for (int64_t r = 0; r < N; ++r)
      dequantizeRow(w.data() + r * rowBytes, f, K, wdq.data() + r * K);
    x.resize(M * K);
    for (float &v : x)
      v = uniform(rng);
    // Some blocks of x all zero, some with a large outlier.
    const int64_t block = f.group < 64 ? f.group : 64;
    for (int64_t b = 0; b < M * K / block; ++b) {
      if (rng() % 7 == 0)
        std::fill(x.begin() + b * block, x.begin() + (b + 1) * block, 0.0f);
      else if (rng() % 5 == 0)
        x[b * block + rng() % block] = 20.0f * uniform(rng);
    }
    y0.resize(M * N);
    for (float &v : y0)
      v = uniform(rng);
    ref.assign(M * N, 0.0);
    mag.assign(M * N, 0.0);
    int8Err.assign(M * N, 0.0);
    for (int64_t i = 0; i < M; ++i) {
      std::vector<double> dx(K / block);
      for (int64_t b = 0; b < K / block; ++b) {
        double amax = 0.0;
        for (int64_t kk = 0; kk < block; ++kk)
          amax = std::max(amax, std::fabs(double(x[i * K + b * block + kk])));
        dx[b] = amax / 127.0;
      }
      for (int64_t j = 0; j < N; ++j) {
        double s = 0.0, a = 0.0, e = 0.0;
        for (int64_t kk = 0; kk < K; ++kk) {
          double wv = wdq[j * K + kk], xv = x[i * K + kk];
          s += wv * xv;
          a += std::fabs(wv * xv);
          e += std::fabs(wv) * dx[kk / block] * 0.5;
        }
        ref[i * N + j] = s;
        mag[i * N + j] = a;
        int8Err[i * N + j] = e;
      }
    }
  }

  /// Output i's allowed distance from the generic (f32 x) path with `act`.
  double tolerance(int64_t i, QActivations act) const {
    return activationBoundScale(act) * int8Err[i] * 1.001 +
           2e-5 * (mag[i] + 1.0);
  }
};

} // namespace fm::kernels::testing
