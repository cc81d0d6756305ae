// Checks the moe kernel against the double-precision reference: rows 1, 5
// and 17, 4-8 experts, top-1/top-2, with and without renormalization, a
// shared expert, accumulation, strided rows, stacked and separate gate/up,
// f16 weights, 1-2 threads, experts that get no row, and ties.
#include "kernels/moe.h"

#include "kernels/matmul.h"
#include "kernels/moe_reference.h"
#include "base/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace fm::kernels {
namespace {

fm::rt::ThreadPool *poolOf(int threads) {
  static std::unique_ptr<fm::rt::ThreadPool> pools[4];
  if (!pools[threads])
    pools[threads] = std::make_unique<fm::rt::ThreadPool>(threads);
  return pools[threads].get();
}

struct Case {
  int64_t rows = 5, hidden = 24, experts = 4, intermediate = 12, topK = 2;
  bool normTopk = true, shared = false, accumulate = false;
  bool stacked = true;           // gate and up back to back
  int64_t xStride = 0, yStride = 0; // 0: dense
  int threads = 1;
  uint32_t seed = 1;

  std::string name() const {
    return "rows " + std::to_string(rows) + ", experts " +
           std::to_string(experts) + ", top " + std::to_string(topK) +
           (normTopk ? ", norm" : "") + (shared ? ", shared" : "") +
           (accumulate ? ", accumulate" : "") +
           (stacked ? ", stacked" : ", separate") +
           (xStride ? ", strided" : "") + ", threads " + std::to_string(threads);
  }
};

// Weights in one block, each expert's gate and up back to back when
// stacked (as the compiler writes them), else with a gap between.
struct Weights {
  reference::Moe ref;
  std::vector<float> storage;
  std::vector<const void *> gate, up, down;
  const void *router = nullptr, *sg = nullptr, *su = nullptr, *sd = nullptr,
             *seg = nullptr;
};

void build(const Case &c, Weights &w,
           const std::function<float(std::mt19937 &)> &draw) {
  std::mt19937 rng(c.seed);
  const int64_t K = c.hidden, I = c.intermediate, Is = c.shared ? 10 : 0;
  reference::Moe &r = w.ref;
  r.hidden = K;
  r.intermediate = I;
  r.topK = c.topK;
  r.normTopk = c.normTopk;
  r.sharedIntermediate = Is;
  auto fill = [&](std::vector<float> &v, size_t n) {
    v.resize(n);
    for (float &f : v)
      f = draw(rng);
  };
  fill(r.router, c.experts * K);
  r.experts.resize(c.experts);
  for (auto &e : r.experts) {
    fill(e.gate, I * K);
    fill(e.up, I * K);
    fill(e.down, K * I);
  }
  if (Is > 0) {
    fill(r.shared.gate, Is * K);
    fill(r.shared.up, Is * K);
    fill(r.shared.down, K * Is);
    fill(r.sharedExpertGate, K);
  }
  // Lay everything out in one vector; offsets first, pointers after.
  const size_t gap = c.stacked ? 0 : 16;
  std::vector<size_t> at;
  size_t size = 0;
  auto place = [&](const std::vector<float> &v, size_t gapBefore) {
    size += gapBefore;
    at.push_back(size);
    size += v.size();
  };
  place(r.router, 0);
  for (auto &e : r.experts) {
    place(e.gate, 16);
    place(e.up, gap);
    place(e.down, 16);
  }
  if (Is > 0) {
    place(r.shared.gate, 16);
    place(r.shared.up, gap);
    place(r.shared.down, 16);
    place(r.sharedExpertGate, 16);
  }
  w.storage.assign(size, NAN); // gaps are poison
  size_t i = 0;
  auto put = [&](const std::vector<float> &v) {
    std::copy(v.begin(), v.end(), w.storage.begin() + at[i]);
    return static_cast<const void *>(w.storage.data() + at[i++]);
  };
  w.router = put(r.router);
  for (auto &e : r.experts) {
    w.gate.push_back(put(e.gate));
    w.up.push_back(put(e.up));
    w.down.push_back(put(e.down));
  }
  if (Is > 0) {
    w.sg = put(r.shared.gate);
    w.su = put(r.shared.up);
    w.sd = put(r.shared.down);
    w.seg = put(r.sharedExpertGate);
  }
}

MoeArgs argsFor(const Case &c, const Weights &w) {
  MoeArgs a;
  a.shape.rows = c.rows;
  a.shape.hidden = c.hidden;
  a.shape.experts = c.experts;
  a.shape.intermediate = c.intermediate;
  a.shape.topK = c.topK;
  a.shape.sharedIntermediate = w.ref.sharedIntermediate;
  a.normTopk = c.normTopk;
  a.accumulate = c.accumulate;
  a.router = w.router;
  a.gate = w.gate.data();
  a.up = w.up.data();
  a.down = w.down.data();
  a.sharedGate = w.sg;
  a.sharedUp = w.su;
  a.sharedDown = w.sd;
  a.sharedExpertGate = w.seg;
  return a;
}

// Runs the kernel on random x (and y, when accumulating) and compares with
// the reference; checks that scratch and the y padding are left alone.
void check(const Case &c, const Weights &w, const std::vector<float> &xDense,
           bool expectFinite = true) {
  SCOPED_TRACE(c.name());
  const int64_t K = c.hidden, M = c.rows;
  const int64_t xs = c.xStride ? c.xStride : K, ys = c.yStride ? c.yStride : K;
  std::vector<float> x(M * xs, NAN), y(M * ys, -7.0f), want(M * K);
  std::mt19937 rng(c.seed + 100);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t k = 0; k < K; ++k) {
      x[r * xs + k] = xDense[r * K + k];
      y[r * ys + k] = want[r * K + k] = u(rng);
    }
  w.ref.run(xDense.data(), M, want.data(), c.accumulate);

  MoeArgs a = argsFor(c, w);
  a.x = x.data();
  a.xStride = xs;
  a.y = y.data();
  a.yStride = ys;
  const size_t floats = moeScratchFloats(a.shape);
  const size_t guard = 64;
  std::vector<float> scratch(floats + guard, 12345.0f);
  moe(a, scratch.data(), c.threads > 1 ? poolOf(c.threads) : nullptr);

  for (size_t i = floats; i < floats + guard; ++i)
    ASSERT_EQ(scratch[i], 12345.0f) << "scratch overrun at " << i;
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t k = 0; k < K; ++k) {
      const float got = y[r * ys + k], ref = want[r * K + k];
      if (expectFinite)
        ASSERT_TRUE(std::isfinite(got)) << "row " << r << " col " << k;
      ASSERT_NEAR(got, ref, 2e-4f + 2e-4f * std::fabs(ref))
          << "row " << r << " col " << k;
    }
    for (int64_t k = K; k < ys; ++k)
      ASSERT_EQ(y[r * ys + k], -7.0f) << "y padding written, row " << r;
  }
}

std::vector<float> randomRows(int64_t M, int64_t K, uint32_t seed, float lo = -1,
                              float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> x(M * K);
  for (float &v : x)
    v = u(rng);
  return x;
}

float uniform(std::mt19937 &rng) {
  return std::uniform_real_distribution<float>(-0.5f, 0.5f)(rng);
}

TEST(Moe, MatchesReference) {
  uint32_t seed = 1;
  for (int64_t rows : {1, 5, 17})
    for (int64_t experts : {4, 8})
      for (int64_t topK : {1, 2})
        for (int variant = 0; variant < 4; ++variant)
          for (int threads : {1, 2}) {
            Case c;
            c.rows = rows;
            c.experts = experts;
            c.topK = topK;
            c.normTopk = variant != 1;
            c.shared = variant >= 2;
            c.accumulate = variant == 1 || variant == 3;
            c.stacked = (seed % 3) != 0;
            c.threads = threads;
            c.seed = seed++;
            Weights w;
            build(c, w, uniform);
            check(c, w, randomRows(rows, c.hidden, c.seed + 7));
          }
}

TEST(Moe, StridedRows) {
  for (int threads : {1, 2}) {
    Case c;
    c.rows = 17;
    c.experts = 8;
    c.topK = 2;
    c.xStride = 40;
    c.yStride = 30;
    c.shared = true;
    c.accumulate = true;
    c.threads = threads;
    Weights w;
    build(c, w, uniform);
    check(c, w, randomRows(c.rows, c.hidden, 99));
  }
}

// Experts 2 and 3 have router rows that no positive x picks: they get no
// row, and their weights (NaN here) are never read.
TEST(Moe, ExpertsWithoutRowsCostNothing) {
  for (int threads : {1, 2})
    for (int64_t rows : {1, 5, 17}) {
      Case c;
      c.rows = rows;
      c.experts = 6;
      c.topK = 2;
      c.threads = threads;
      Weights w;
      build(c, w, [](std::mt19937 &rng) {
        return std::uniform_real_distribution<float>(0.05f, 0.5f)(rng);
      });
      for (int64_t e : {2, 3}) {
        for (int64_t k = 0; k < c.hidden; ++k) {
          w.storage[static_cast<const float *>(w.router) - w.storage.data() +
                    e * c.hidden + k] = -1.0f;
          w.ref.router[e * c.hidden + k] = -1.0f;
        }
        for (const void *p : {w.gate[e], w.up[e], w.down[e]}) {
          float *f = const_cast<float *>(static_cast<const float *>(p));
          std::fill(f, f + c.hidden * c.intermediate, NAN);
        }
      }
      std::vector<float> x = randomRows(rows, c.hidden, 5, 0.1f, 1.0f);
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<int64_t> picked = w.ref.route(&x[r * c.hidden]);
        for (int64_t e : picked)
          ASSERT_TRUE(e != 2 && e != 3);
      }
      // The reference skips them too (weights are read only when routed).
      for (int64_t e : {2, 3})
        for (auto *v : {&w.ref.experts[e].gate, &w.ref.experts[e].up,
                        &w.ref.experts[e].down})
          std::fill(v->begin(), v->end(), NAN);
      check(c, w, x);
    }
}

// Equal router logits (exact in f32): the lower expert index wins.
TEST(Moe, TiesGoToTheLowerIndex) {
  for (int64_t topK : {1, 2}) {
    Case c;
    c.rows = 5;
    c.experts = 5;
    c.topK = topK;
    c.hidden = 8;
    Weights w;
    build(c, w, uniform);
    float *router = const_cast<float *>(static_cast<const float *>(w.router));
    // Rows 1, 3 and 4 of the router are equal and large; 0 and 2 small.
    for (int64_t e = 0; e < c.experts; ++e)
      for (int64_t k = 0; k < c.hidden; ++k) {
        float v = (e == 1 || e == 3 || e == 4) ? 0.5f : -0.25f;
        router[e * c.hidden + k] = v;
        w.ref.router[e * c.hidden + k] = v;
      }
    std::vector<float> x(c.rows * c.hidden, 1.0f);
    std::vector<int64_t> picked = w.ref.route(x.data());
    ASSERT_EQ(picked[0], 1);
    if (topK == 2)
      ASSERT_EQ(picked[1], 3);
    // Make the losers' outputs distinguishable: poison expert 4.
    for (const void *p : {w.gate[4], w.up[4], w.down[4]}) {
      float *f = const_cast<float *>(static_cast<const float *>(p));
      std::fill(f, f + c.hidden * c.intermediate, NAN);
    }
    for (auto *v : {&w.ref.experts[4].gate, &w.ref.experts[4].up,
                    &w.ref.experts[4].down})
      std::fill(v->begin(), v->end(), NAN);
    check(c, w, x);
  }
}

TEST(Moe, F16Weights) {
  auto toHalf = [](float f) {
    // Round to nearest representable half by truncating the mantissa of
    // values in [2^-5, 1): exact enough for a reference built from the
    // rounded values.
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint16_t sign = (bits >> 16) & 0x8000;
    int32_t exp = int32_t((bits >> 23) & 0xff) - 127 + 15;
    if (f == 0.0f || exp <= 0)
      return sign;
    return uint16_t(sign | (exp << 10) | ((bits >> 13) & 0x3ff));
  };
  for (int threads : {1, 2}) {
    Case c;
    c.rows = 17;
    c.experts = 4;
    c.topK = 2;
    c.shared = true;
    c.threads = threads;
    Weights w;
    build(c, w, uniform);
    // Round every weight to f16; the reference sees the rounded values.
    std::vector<uint16_t> halves(w.storage.size());
    for (size_t i = 0; i < w.storage.size(); ++i) {
      halves[i] = toHalf(std::isnan(w.storage[i]) ? 0.0f : w.storage[i]);
      w.storage[i] = halfToFloat(halves[i]);
    }
    auto round = [&](std::vector<float> &v) {
      for (float &f : v)
        f = halfToFloat(toHalf(f));
    };
    round(w.ref.router);
    for (auto &e : w.ref.experts) {
      round(e.gate);
      round(e.up);
      round(e.down);
    }
    round(w.ref.shared.gate);
    round(w.ref.shared.up);
    round(w.ref.shared.down);
    round(w.ref.sharedExpertGate);
    auto half = [&](const void *p) -> const void * {
      return p ? halves.data() + (static_cast<const float *>(p) - w.storage.data())
               : nullptr;
    };
    Weights h = w;
    h.router = half(w.router);
    for (size_t e = 0; e < w.gate.size(); ++e) {
      h.gate[e] = half(w.gate[e]);
      h.up[e] = half(w.up[e]);
      h.down[e] = half(w.down[e]);
    }
    h.sg = half(w.sg);
    h.su = half(w.su);
    h.sd = half(w.sd);
    h.seg = half(w.seg);
    // check() builds args from `h`, with f16 on.
    const int64_t K = c.hidden, M = c.rows;
    std::vector<float> x = randomRows(M, K, 3), y(M * K, 0.0f), want(M * K);
    w.ref.run(x.data(), M, want.data(), false);
    MoeArgs a = argsFor(c, h);
    a.f16 = true;
    a.x = x.data();
    a.xStride = K;
    a.y = y.data();
    a.yStride = K;
    std::vector<float> scratch(moeScratchFloats(a.shape));
    moe(a, scratch.data(), threads > 1 ? poolOf(threads) : nullptr);
    for (int64_t i = 0; i < M * K; ++i)
      ASSERT_NEAR(y[i], want[i], 2e-4f + 2e-4f * std::fabs(want[i])) << i;
  }
}

// Prefill-sized: enough active experts that two threads take the parallel
// expert path, and the result equals one thread's.
TEST(Moe, ThreadCountDoesNotChangeTheResult) {
  Case c;
  c.rows = 64;
  c.experts = 8;
  c.topK = 2;
  c.hidden = 64;
  c.intermediate = 96;
  c.shared = true;
  Weights w;
  build(c, w, uniform);
  std::vector<float> x = randomRows(c.rows, c.hidden, 11);
  std::vector<float> y1(c.rows * c.hidden), y2(c.rows * c.hidden);
  MoeArgs a = argsFor(c, w);
  a.x = x.data();
  a.xStride = c.hidden;
  a.yStride = c.hidden;
  std::vector<float> scratch(moeScratchFloats(a.shape));
  a.y = y1.data();
  moe(a, scratch.data(), nullptr);
  a.y = y2.data();
  moe(a, scratch.data(), poolOf(2));
  for (size_t i = 0; i < y1.size(); ++i)
    ASSERT_NEAR(y1[i], y2[i], 1e-5f + 1e-5f * std::fabs(y1[i])) << i;
  check(c, w, x);
}

} // namespace
} // namespace fm::kernels
