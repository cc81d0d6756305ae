// The quantizer as it was before the batched search (quantize.cpp): kept
// verbatim, for tests that check the new one packs the same bytes, and for
// the benchmark that times both in one run. Not part of fm_kernels.
#include "kernels/quantize_reference.h"

#include "kernels/matmul.h" // halfToFloat
#include "kernels/quantize.h" // floatToHalf

#include <algorithm>
#include <cassert>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

namespace fm::kernels::reference {
namespace {

constexpr float kHalfMax = 65504.0f;
// Clipping factors searched: 1.0 down to 0.5 in this many steps.
constexpr int kClipSteps = 32;
// Least-squares refits after the search.
constexpr int kRefits = 3;
// quantizeRows uses one thread per this many weights, up to the core count.
constexpr int64_t kWeightsPerThread = int64_t(1) << 20;

float toHalfAndBack(float v) {
  return halfToFloat(floatToHalf(std::min(std::max(v, -kHalfMax), kHalfMax)));
}

// The next f16 value above or below a positive f16 value h (by bits).
float halfNeighbour(float h, int steps) {
  int bits = static_cast<int>(floatToHalf(h)) + steps;
  if (bits <= 0 || bits >= 0x7c00)
    return h;
  return halfToFloat(static_cast<uint16_t>(bits));
}

// The quant of w for scale s (1/s = inv) and offset: rounded, clamped.
// Clamping before rounding lets the rounding be a truncation of a
// non-negative value, which vectorizes without SSE4.1.
inline float quantOf(float w, float inv, float offset, float qmax) {
  float v = std::fmin(std::fmax(w * inv + offset, 0.0f), qmax);
  return static_cast<float>(static_cast<int>(v + 0.5f));
}

struct Group {
  const float *w;
  int n;
  float qmax;   // 2^bits - 1
  float center; // balanced offset (2^bits - 1) / 2
  float sqSum;  // sum of w^2
};

// Sums are kept in kLanes partial sums (group sizes are multiples of 32),
// so that the loops vectorize without reassociation flags.
constexpr int kLanes = 8;

float laneSum(const float (&acc)[kLanes]) {
  float s = 0.0f;
  for (int l = 0; l < kLanes; ++l)
    s += acc[l];
  return s;
}

// Balanced: value = (q - c) * s. Squared error for an f16 scale s.
float balancedError(const Group &g, float s) {
  if (!(s > 0.0f))
    return g.sqSum;
  const float inv = 1.0f / s;
  float acc[kLanes] = {};
  for (int k = 0; k < g.n; k += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      float q = quantOf(g.w[k + l], inv, g.center, g.qmax);
      float d = g.w[k + l] - (q - g.center) * s;
      acc[l] += d * d;
    }
  return laneSum(acc);
}

// The least-squares scale for the quants that scale s assigns.
float balancedRefit(const Group &g, float s) {
  const float inv = 1.0f / s;
  float num[kLanes] = {}, den[kLanes] = {};
  for (int k = 0; k < g.n; k += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      float lv = quantOf(g.w[k + l], inv, g.center, g.qmax) - g.center;
      num[l] += g.w[k + l] * lv;
      den[l] += lv * lv;
    }
  const float d = laneSum(den);
  return d > 0.0f ? laneSum(num) / d : s;
}

// Returns the chosen f16 scale (as a float) and its error.
std::pair<float, float> searchBalanced(const Group &g, int bits) {
  float amax = 0.0f;
  for (int k = 0; k < g.n; ++k)
    amax = std::max(amax, std::fabs(g.w[k]));
  if (amax == 0.0f)
    return {0.0f, 0.0f};
  float bestS = 0.0f, bestErr = g.sqSum;
  auto tryScale = [&](float s) {
    s = toHalfAndBack(s);
    float err = balancedError(g, s);
    if (err < bestErr) {
      bestErr = err;
      bestS = s;
    }
  };
  for (int i = 0; i <= kClipSteps; ++i)
    tryScale((1.0f - 0.5f * i / kClipSteps) * amax / g.center);
  // max|w| exactly on each level: reproduces weights that lie on the grid
  // with an f16 scale, whichever level their largest magnitude uses.
  if (bits <= 4)
    for (float level = 0.5f; level < g.center; level += 1.0f)
      tryScale(amax / level);
  for (int r = 0; r < kRefits && bestErr > 0.0f; ++r) {
    float before = bestErr, s = bestS;
    if (s > 0.0f) {
      tryScale(balancedRefit(g, s));
      for (int step : {-2, -1, 1, 2})
        tryScale(halfNeighbour(s, step));
    }
    if (!(bestErr < before))
      break;
  }
  return {bestS, bestErr};
}

// Affine: value = q * s + m.
float affineError(const Group &g, float s, float m) {
  float acc[kLanes] = {};
  if (!(s > 0.0f)) {
    for (int k = 0; k < g.n; k += kLanes)
      for (int l = 0; l < kLanes; ++l)
        acc[l] += (g.w[k + l] - m) * (g.w[k + l] - m);
    return laneSum(acc);
  }
  const float inv = 1.0f / s;
  for (int k = 0; k < g.n; k += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      float q = quantOf(g.w[k + l] - m, inv, 0.0f, g.qmax);
      float d = g.w[k + l] - (q * s + m);
      acc[l] += d * d;
    }
  return laneSum(acc);
}

// The least-squares (s, m) for the quants that (s, m) assign.
std::pair<float, float> affineRefit(const Group &g, float s, float m) {
  float inv = 1.0f / s;
  double sq = 0, sq2 = 0, sw = 0, sqw = 0;
  for (int k = 0; k < g.n; ++k) {
    double q = quantOf(g.w[k] - m, inv, 0.0f, g.qmax);
    sq += q;
    sq2 += q * q;
    sw += g.w[k];
    sqw += q * g.w[k];
  }
  double det = g.n * sq2 - sq * sq;
  if (det <= 0.0)
    return {s, m};
  double ns = (g.n * sqw - sq * sw) / det;
  double nm = (sw - ns * sq) / g.n;
  if (!(ns > 0.0))
    return {s, m};
  return {static_cast<float>(ns), static_cast<float>(nm)};
}

struct Affine {
  float s, m, err;
};

Affine searchAffine(const Group &g) {
  float lo = g.w[0], hi = g.w[0];
  for (int k = 1; k < g.n; ++k) {
    lo = std::min(lo, g.w[k]);
    hi = std::max(hi, g.w[k]);
  }
  Affine best{0.0f, toHalfAndBack(lo), 0.0f};
  best.err = affineError(g, 0.0f, best.m);
  if (hi == lo)
    return best;
  auto tryPair = [&](float s, float m) {
    s = toHalfAndBack(s);
    m = toHalfAndBack(m);
    float err = affineError(g, s, m);
    if (err < best.err)
      best = {s, m, err};
  };
  float mid = 0.5f * (lo + hi), half = 0.5f * (hi - lo);
  for (int i = 0; i <= kClipSteps; ++i) {
    float a = 1.0f - 0.5f * i / kClipSteps;
    tryPair(2.0f * a * half / g.qmax, mid - a * half);
  }
  tryPair((hi - lo) / g.qmax, lo); // the plain min/max grid
  for (int r = 0; r < kRefits && best.err > 0.0f; ++r) {
    float before = best.err;
    if (best.s > 0.0f) {
      auto [s, m] = affineRefit(g, best.s, best.m);
      tryPair(s, m);
      float bs = best.s, bm = best.m;
      for (int step : {-1, 1})
        tryPair(halfNeighbour(bs, step), bm);
    }
    if (!(best.err < before))
      break;
  }
  return best;
}

} // namespace

namespace {

// Packs rows [n0, n1); rowError[n - n0] gets each row's (error, sum of w^2).
void quantizeRange(const float *w, int64_t n0, int64_t n1, int64_t K,
                   QuantFormat f, uint8_t *out,
                   std::pair<double, double> *rowError) {
  const size_t rowBytes = packedRowBytes(f, K);
  const int64_t groups = quantGroups(f, K);
  const int64_t U = quantUnitInputs(f), unitBytes = U * f.bits / 8;
  const bool affine = f.grid == QuantGrid::Affine;
  std::vector<uint8_t> q(static_cast<size_t>(f.group));
  for (int64_t n = n0; n < n1; ++n) {
    const float *row = w + n * K;
    uint8_t *packed = out + n * rowBytes;
    std::memset(packed, 0, rowBytes);
    uint8_t *scales = packed + quantBytes(f, K);
    uint8_t *mins = scales + 2 * groups;
    double rowErr = 0.0, rowSq = 0.0;
    for (int64_t g = 0; g < groups; ++g) {
      Group grp{row + g * f.group, f.group,
                static_cast<float>((1 << f.bits) - 1), balancedCenter(f.bits),
                0.0f};
      for (int k = 0; k < grp.n; ++k)
        grp.sqSum += grp.w[k] * grp.w[k];
      float s, m = 0.0f;
      if (affine) {
        Affine a = searchAffine(grp);
        s = a.s;
        m = a.m;
      } else {
        s = searchBalanced(grp, f.bits).first;
      }
      // Quants, and the exact error, for the chosen f16 values.
      double err = 0.0, sq = 0.0;
      float inv = s > 0.0f ? 1.0f / s : 0.0f;
      for (int k = 0; k < grp.n; ++k) {
        float wk = grp.w[k], value;
        int qk;
        if (affine) {
          qk = s > 0.0f ? static_cast<int>(quantOf(wk - m, inv, 0.0f, grp.qmax))
                        : 0;
          value = qk * s + m;
        } else {
          qk = s > 0.0f
                   ? static_cast<int>(quantOf(wk, inv, grp.center, grp.qmax))
                   : (1 << f.bits) / 2;
          value = (qk - grp.center) * s;
        }
        q[k] = static_cast<uint8_t>(qk);
        err += (double(wk) - value) * (double(wk) - value);
        sq += double(wk) * wk;
      }
      rowErr += err;
      rowSq += sq;
      uint16_t sh = floatToHalf(s), mh = floatToHalf(m);
      std::memcpy(scales + 2 * g, &sh, 2);
      if (affine)
        std::memcpy(mins + 2 * g, &mh, 2);
      // Pack the group's units (U divides the group).
      for (int64_t i = 0; i < f.group; ++i) {
        int64_t k = g * f.group + i;
        int64_t u = k / U, r = k % U;
        int64_t j = r / unitBytes, byte = r % unitBytes;
        packed[u * unitBytes + byte] |=
            static_cast<uint8_t>(q[i] << (f.bits * j));
      }
    }
    rowError[n - n0] = {rowErr, rowSq};
  }
}

} // namespace

QuantError quantizeRowsReference(const float *w, int64_t N, int64_t K, QuantFormat f,
                        uint8_t *out) {
  assert(isValidQuantFormat(f) && "invalid quant format");
  assert(K % f.group == 0 && "K must be a multiple of the group");
  std::vector<std::pair<double, double>> rowError(static_cast<size_t>(N));
  // Rows are independent: large tensors are split across the cores, in
  // contiguous blocks; the sums below run in row order whatever the split.
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  threads = static_cast<int>(std::min<int64_t>(
      std::max(threads, 1), std::max<int64_t>(N * K / kWeightsPerThread, 1)));
  threads =
      static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(N, 1)));
  if (threads <= 1) {
    quantizeRange(w, 0, N, K, f, out, rowError.data());
  } else {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      const int64_t n0 = N * t / threads, n1 = N * (t + 1) / threads;
      workers.emplace_back(quantizeRange, w, n0, n1, K, f, out,
                           rowError.data() + n0);
    }
    for (std::thread &t : workers)
      t.join();
  }
  QuantError total;
  for (const auto &[err, sq] : rowError) {
    total.sqError += err;
    total.sqSum += sq;
  }
  return total;
}

} // namespace fm::kernels::reference
