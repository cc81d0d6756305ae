// Weight packing for qformat.h: a per-group search for the f16 scale (and
// minimum) with the least squared error, then bit packing. The search
// prices its candidate scales in vector batches (quantize_search.h) on the
// widest instruction set the CPU has; the result is the same on all.
#include "kernels/quantize.h"

#include "kernels/isa.h"
#include "kernels/matmul.h" // halfToFloat
#include "kernels/quantize_search.h"
#include "kernels/quantize_search_impl.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

namespace fm::kernels {
namespace {

using qsearch::Group;
using qsearch::kMaxBatch;
using qsearch::SearchIsa;

constexpr float kHalfMax = 65504.0f;
// Clipping factors searched: 1.0 down to 0.5 in this many steps.
constexpr int kClipSteps = 32;
// Least-squares refits after the search.
constexpr int kRefits = 3;
// quantizeRows uses one thread per this many weights, up to the core count.
constexpr int64_t kWeightsPerThread = int64_t(1) << 20;
// Candidates of the first pass: the clip steps, then (balanced, bits <= 4)
// the 7 levels of 4 bits, or (affine) the plain min/max grid and the
// zero-scale start.
constexpr int kMaxCandidates = kClipSteps + 1 + 8;

struct GenericTag {
  static constexpr bool kX86 = false;
  static constexpr bool kWide = false;
  static void toHalfAndBack(float *v, int count) {
    for (int i = 0; i < count; ++i)
      v[i] = halfToFloat(
          floatToHalf(std::min(std::max(v[i], -kHalfMax), kHalfMax)));
  }
};

float toHalfAndBack(const SearchIsa &isa, float v) {
  isa.toHalfAndBack(&v, 1);
  return v;
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
// non-negative value.
inline float quantOf(float w, float inv, float offset, float qmax) {
  float v = std::fmin(std::fmax(w * inv + offset, 0.0f), qmax);
  return static_cast<float>(static_cast<int>(v + 0.5f));
}

// The errors of (scale, minimum) pairs priced so far in a group's refit
// rounds (at most 1 + 3 * 5).
struct PricedScales {
  float s[16], m[16], err[16];
  int n = 0;
  void add(float sv, float e, float mv = 0.0f) {
    if (n < 16) {
      s[n] = sv;
      m[n] = mv;
      err[n++] = e;
    }
  }
  bool find(float sv, float mv, float *e) const {
    for (int i = 0; i < n; ++i)
      if (s[i] == sv && m[i] == mv) {
        *e = err[i];
        return true;
      }
    return false;
  }
};

// Balanced: the chosen f16 scale (0 for an all-zero group). Candidates and
// tie-breaks are those of searchBalanced in quantize_reference.cpp: the
// first candidate with the strictly least error wins.
float searchBalanced(const SearchIsa &isa, const Group &g, float amax,
                     int bits) {
  if (amax == 0.0f)
    return 0.0f;
  float bestS = 0.0f, bestErr = g.sqSum;
  float cand[kMaxCandidates], err[kMaxCandidates];
  for (int i = 0; i <= kClipSteps; ++i) // vectorized: no n++ in the loop
    cand[i] = (1.0f - 0.5f * i / kClipSteps) * amax / g.center;
  int n = kClipSteps + 1;
  // max|w| exactly on each level: reproduces weights that lie on the grid
  // with an f16 scale, whichever level their largest magnitude uses.
  if (bits <= 4)
    for (float level = 0.5f; level < g.center; level += 1.0f)
      cand[n++] = amax / level;
  isa.toHalfAndBack(cand, n);
  for (int i = 0; i < n; i += kMaxBatch)
    isa.balancedErrors(g, cand + i, std::min(kMaxBatch, n - i), err + i);
  for (int i = 0; i < n; ++i)
    if (err[i] < bestErr) {
      bestErr = err[i];
      bestS = cand[i];
    }
  // Refit rounds often price a scale again (the last best, a neighbour of
  // the previous one): errors are a function of the scale alone, so the
  // ones already known are looked up.
  PricedScales priced;
  priced.add(bestS, bestErr);
  for (int r = 0; r < kRefits && bestErr > 0.0f; ++r) {
    const float before = bestErr, s = bestS;
    if (s > 0.0f) {
      float c[5] = {isa.balancedRefit(g, s), halfNeighbour(s, -2),
                    halfNeighbour(s, -1), halfNeighbour(s, 1),
                    halfNeighbour(s, 2)};
      isa.toHalfAndBack(c, 5);
      float e[5], todo[5];
      int slot[5], n = 0;
      for (int i = 0; i < 5; ++i)
        if (!priced.find(c[i], 0.0f, &e[i])) {
          slot[n] = i;
          todo[n++] = c[i];
        }
      if (n > 0) {
        float te[5];
        isa.balancedErrors(g, todo, n, te);
        for (int i = 0; i < n; ++i) {
          e[slot[i]] = te[i];
          priced.add(todo[i], te[i]);
        }
      }
      for (int i = 0; i < 5; ++i)
        if (e[i] < bestErr) {
          bestErr = e[i];
          bestS = c[i];
        }
    }
    if (!(bestErr < before))
      break;
  }
  return bestS;
}

// The least-squares (s, m) for the quants that (s, m) assign (double sums in
// k order, as the reference).
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

// Affine: searchAffine of quantize_reference.cpp, batched.
Affine searchAffine(const SearchIsa &isa, const Group &g, float lo, float hi) {
  float cs[kMaxCandidates], cm[kMaxCandidates], err[kMaxCandidates];
  int n = 0;
  // The start: scale 0, every weight at the minimum.
  cs[n] = 0.0f;
  cm[n++] = lo;
  const float mid = 0.5f * (lo + hi), half = 0.5f * (hi - lo);
  if (hi != lo) {
    for (int i = 0; i <= kClipSteps; ++i) {
      float a = 1.0f - 0.5f * i / kClipSteps;
      cs[n] = 2.0f * a * half / g.qmax;
      cm[n++] = mid - a * half;
    }
    cs[n] = (hi - lo) / g.qmax; // the plain min/max grid
    cm[n++] = lo;
  }
  isa.toHalfAndBack(cs, n);
  isa.toHalfAndBack(cm, n);
  for (int i = 0; i < n; i += kMaxBatch)
    isa.affineErrors(g, cs + i, cm + i, std::min(kMaxBatch, n - i), err + i);
  Affine best{cs[0], cm[0], err[0]};
  if (hi == lo)
    return best;
  for (int i = 1; i < n; ++i)
    if (err[i] < best.err)
      best = {cs[i], cm[i], err[i]};
  PricedScales priced;
  priced.add(best.s, best.err, best.m);
  for (int r = 0; r < kRefits && best.err > 0.0f; ++r) {
    const float before = best.err;
    if (best.s > 0.0f) {
      // The reference tries the refit, then the f16 neighbours of whichever
      // is best after it: both sets of neighbours go in one batch.
      auto [rs, rm] = affineRefit(g, best.s, best.m);
      rs = toHalfAndBack(isa, rs);
      rm = toHalfAndBack(isa, rm);
      float s5[5] = {rs, halfNeighbour(best.s, -1), halfNeighbour(best.s, 1),
                     halfNeighbour(rs, -1), halfNeighbour(rs, 1)};
      float m5[5] = {rm, best.m, best.m, rm, rm};
      float e5[5], ts[5], tm[5], te[5];
      int slot[5], n = 0;
      for (int i = 0; i < 5; ++i)
        if (!priced.find(s5[i], m5[i], &e5[i])) {
          slot[n] = i;
          ts[n] = s5[i];
          tm[n++] = m5[i];
        }
      if (n > 0) {
        isa.affineErrors(g, ts, tm, n, te);
        for (int i = 0; i < n; ++i) {
          e5[slot[i]] = te[i];
          priced.add(ts[i], te[i], tm[i]);
        }
      }
      int first = 1;
      if (e5[0] < best.err) {
        best = {rs, rm, e5[0]};
        first = 3;
      }
      for (int i = first; i < first + 2; ++i)
        if (e5[i] < best.err)
          best = {s5[i], m5[i], e5[i]};
    }
    if (!(best.err < before))
      break;
  }
  return best;
}

// Packs rows [n0, n1); rowError[n - n0] gets each row's (error, sum of w^2).
void quantizeRange(const SearchIsa &isa, const float *w, int64_t n0,
                   int64_t n1, int64_t K, QuantFormat f, uint8_t *out,
                   std::pair<double, double> *rowError) {
  const size_t rowBytes = packedRowBytes(f, K);
  const int64_t groups = quantGroups(f, K);
  const int64_t U = quantUnitInputs(f), unitBytes = U * f.bits / 8;
  const int planes = 8 / f.bits;
  const bool affine = f.grid == QuantGrid::Affine;
  const float qmax = static_cast<float>((1 << f.bits) - 1);
  const float center = balancedCenter(f.bits);
  const int G = f.group;
  std::vector<float> sqSums(static_cast<size_t>(groups));
  std::vector<uint8_t> q(static_cast<size_t>(K));
  for (int64_t n = n0; n < n1; ++n) {
    const float *row = w + n * K;
    uint8_t *packed = out + n * rowBytes;
    uint8_t *scales = packed + quantBytes(f, K);
    uint8_t *mins = scales + 2 * groups;
    // Each group's sum of squares in k order, several groups side by side
    // (independent chains, so they overlap).
    std::fill(sqSums.begin(), sqSums.end(), 0.0f);
    for (int64_t g0 = 0; g0 < groups; g0 += 8) {
      const int64_t gn = std::min<int64_t>(8, groups - g0);
      float acc[8] = {};
      for (int k = 0; k < G; ++k)
        for (int64_t j = 0; j < gn; ++j) {
          const float v = row[(g0 + j) * G + k];
          acc[j] += v * v;
        }
      for (int64_t j = 0; j < gn; ++j)
        sqSums[g0 + j] = acc[j];
    }
    double rowErr = 0.0, rowSq = 0.0;
    for (int64_t g = 0; g < groups; ++g) {
      const float *wg = row + g * G;
      const Group grp{wg, G, qmax, center, sqSums[g]};
      float s, m = 0.0f;
      if (affine) {
        // std::min / std::max in 8 lanes, then across them: the same
        // result as one pass (a NaN in wg[0] sticks, later ones are
        // skipped), but vectorized.
        float lo8[8], hi8[8];
        for (int l = 0; l < 8; ++l)
          lo8[l] = hi8[l] = wg[0];
        for (int k = 0; k < G; k += 8)
          for (int l = 0; l < 8; ++l) {
            lo8[l] = std::min(lo8[l], wg[k + l]);
            hi8[l] = std::max(hi8[l], wg[k + l]);
          }
        float lo = lo8[0], hi = hi8[0];
        for (int l = 1; l < 8; ++l) {
          lo = std::min(lo, lo8[l]);
          hi = std::max(hi, hi8[l]);
        }
        const Affine a = searchAffine(isa, grp, lo, hi);
        s = a.s;
        m = a.m;
      } else {
        float amax8[8] = {}; // as lo8/hi8 above: NaNs are skipped
        for (int k = 0; k < G; k += 8)
          for (int l = 0; l < 8; ++l)
            amax8[l] = std::max(amax8[l], std::fabs(wg[k + l]));
        float amax = 0.0f;
        for (float a : amax8)
          amax = std::max(amax, a);
        s = searchBalanced(isa, grp, amax, f.bits);
      }
      // Quants, and the exact error, for the chosen f16 values.
      double err, sq;
      isa.finish(grp, affine, s, m, q.data() + g * G, &err, &sq);
      rowErr += err;
      rowSq += sq;
      const uint16_t sh = floatToHalf(s), mh = floatToHalf(m);
      std::memcpy(scales + 2 * g, &sh, 2);
      if (affine)
        std::memcpy(mins + 2 * g, &mh, 2);
    }
    // Unit u's byte b holds, in plane j, input u * U + j * unitBytes + b.
    for (int64_t u = 0; u < K / U; ++u) {
      const uint8_t *qu = q.data() + u * U;
      uint8_t *pu = packed + u * unitBytes;
      std::memcpy(pu, qu, static_cast<size_t>(unitBytes)); // plane 0
      for (int j = 1; j < planes; ++j)
        for (int64_t b = 0; b < unitBytes; ++b)
          pu[b] = static_cast<uint8_t>(pu[b] | (qu[j * unitBytes + b] << (f.bits * j)));
    }
    rowError[n - n0] = {rowErr, rowSq};
  }
}

const SearchIsa &bestSearchIsa() {
  static const SearchIsa *isa = [] {
#if defined(FM_KERNELS_X86)
    if (kernelIsaAvailable(KernelIsa::Avx512))
      return &qsearch::kSearchAvx512;
    if (kernelIsaAvailable(KernelIsa::Avx2))
      return &qsearch::kSearchAvx2;
#endif
    return &qsearch::kSearchGeneric;
  }();
  return *isa;
}

} // namespace

const qsearch::SearchIsa qsearch::kSearchGeneric =
    qsearch::Search<GenericTag>::kTable;

uint16_t floatToHalf(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof(x));
  uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  uint32_t h;
  if (x >= 0x47800000u) {
    // >= 65536 (or inf, NaN): inf, or a quiet NaN.
    h = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (x < 0x38800000u) {
    // Below the smallest normal half: adding 0.5 lines the half's
    // subnormal mantissa up with the float's low bits, and the FPU rounds.
    const uint32_t magicBits = 126u << 23; // 0.5f
    float f, magic;
    std::memcpy(&f, &x, sizeof(f));
    std::memcpy(&magic, &magicBits, sizeof(magic));
    f += magic;
    std::memcpy(&h, &f, sizeof(h));
    h -= magicBits;
  } else {
    // Rebias the exponent and round the 13 dropped bits to nearest even;
    // a carry out of the mantissa bumps the exponent (up to inf).
    uint32_t odd = (x >> 13) & 1u;
    x += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;
    h = x >> 13;
  }
  return static_cast<uint16_t>(sign | h);
}

QuantError qsearch::quantizeRowsWith(const SearchIsa &isa, const float *w,
                                     int64_t N, int64_t K, QuantFormat f,
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
    quantizeRange(isa, w, 0, N, K, f, out, rowError.data());
  } else {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      const int64_t n0 = N * t / threads, n1 = N * (t + 1) / threads;
      workers.emplace_back(quantizeRange, std::cref(isa), w, n0, n1, K, f, out,
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

QuantError quantizeRows(const float *w, int64_t N, int64_t K, QuantFormat f,
                        uint8_t *out) {
  return qsearch::quantizeRowsWith(bestSearchIsa(), w, N, K, f, out);
}

void dequantizeRow(const uint8_t *row, QuantFormat f, int64_t K, float *out) {
  assert(isValidQuantFormat(f) && "invalid quant format");
  assert(K % f.group == 0 && "K must be a multiple of the group");
  const int64_t groups = quantGroups(f, K);
  const uint8_t *scales = row + quantBytes(f, K);
  const uint8_t *mins = scales + 2 * groups;
  const int64_t U = quantUnitInputs(f), unitBytes = U * f.bits / 8;
  const int planes = 8 / f.bits, mask = (1 << f.bits) - 1;
  const float center = balancedCenter(f.bits);
  const bool affine = f.grid == QuantGrid::Affine;
  for (int64_t g = 0; g < groups; ++g) {
    uint16_t sh, mh = 0;
    std::memcpy(&sh, scales + 2 * g, 2);
    if (affine)
      std::memcpy(&mh, mins + 2 * g, 2);
    const float s = halfToFloat(sh), m = halfToFloat(mh);
    // Unit by unit, plane by plane: runs of unitBytes contiguous inputs.
    for (int64_t u = g * f.group / U; u < (g + 1) * f.group / U; ++u) {
      const uint8_t *unit = row + u * unitBytes;
      float *o = out + u * U;
      for (int j = 0; j < planes; ++j)
        for (int64_t k = 0; k < unitBytes; ++k) {
          float q = static_cast<float>((unit[k] >> (f.bits * j)) & mask);
          o[j * unitBytes + k] = affine ? q * s + m : (q - center) * s;
        }
    }
  }
}

} // namespace fm::kernels
