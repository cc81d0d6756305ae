// The LoRA side-path kernels on every available path against plain
// reference code: matrices decoded by hand from their documented layout
// (f16 bits; q8 quants and scales of qformat.h), products in double.
#include "kernels/lora.h"

#include "base/ThreadPool.h"
#include "kernels/matmul.h"
#include "kernels/qformat.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace fm::kernels {
namespace {

/// A matrix in one of the LoRA storage formats, with its exact values.
struct Stored {
  std::vector<uint8_t> bytes;
  LoraMatrix m;
  std::vector<double> values; // rows x cols, as the format stores them
};

double halfValue(uint16_t h) {
  // IEEE binary16 by its definition (the kernels' conversion is not used).
  const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  double v = exp == 0 ? std::ldexp(mant, -24)
                      : std::ldexp(1024 + mant, exp - 25);
  return sign ? -v : v;
}

Stored make(int64_t rows, int64_t cols, bool q8, int group, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> w(size_t(rows * cols));
  for (float &v : w)
    v = nd(rng);
  Stored s;
  s.m.rows = rows;
  s.m.cols = cols;
  s.m.q8 = q8;
  s.m.group = group;
  s.bytes.resize(loraMatrixBytes(rows, cols, q8, group) + 64);
  s.values.resize(w.size());
  if (!q8) {
    for (size_t i = 0; i < w.size(); ++i) {
      const uint16_t h = floatToHalf(w[i]);
      std::memcpy(s.bytes.data() + 2 * i, &h, 2);
      s.values[i] = halfValue(h);
    }
  } else {
    const QuantFormat f{8, group, QuantGrid::Balanced};
    quantizeRows(w.data(), rows, cols, f, s.bytes.data());
    const size_t rowBytes = packedRowBytes(f, cols);
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t *row = s.bytes.data() + r * rowBytes;
      for (int64_t c = 0; c < cols; ++c) {
        uint16_t h;
        std::memcpy(&h, row + cols + 2 * (c / group), 2);
        s.values[r * cols + c] = (double(row[c]) - 127.5) * halfValue(h);
      }
    }
  }
  s.m.data = s.bytes.data();
  return s;
}

std::vector<float> randomRows(int64_t rows, int64_t ld, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(size_t(rows * ld));
  for (float &x : v)
    x = u(rng);
  return v;
}

std::vector<KernelIsa> paths() {
  std::vector<KernelIsa> out;
  for (KernelIsa p : {KernelIsa::Generic, KernelIsa::Avx2, KernelIsa::Avx512})
    if (kernelIsaAvailable(p))
      out.push_back(p);
  return out;
}

// Two down parts into one t (as a fused q/k projection's stacked A), then
// two up parts into disjoint column ranges of a strided y, against the
// reference; the result is the same on one thread and on three.
void checkCase(KernelIsa path, int64_t M, int64_t K, int64_t r0, int64_t r1,
               int64_t n0, int64_t n1, bool q8, int group) {
  SCOPED_TRACE(testing::Message()
               << kernelIsaName(path) << " M=" << M << " K=" << K << " r=" << r0
               << "," << r1 << " N=" << n0 << "," << n1 << (q8 ? " q8/" : " f16")
               << (q8 ? std::to_string(group) : ""));
  const Stored a0 = make(r0, K, q8, group, 1), a1 = make(r1, K, q8, group, 2);
  const Stored b0 = make(r0, n0, q8, group, 3), b1 = make(r1, n1, q8, group, 4);
  const int64_t ldx = K + 3, R = r0 + r1, ldt = R + 1;
  const int64_t ldy = n0 + n1 + 5;
  const std::vector<float> x = randomRows(M, ldx, 5);
  const std::vector<float> y0 = randomRows(M, ldy, 6);
  const float s0 = 0.75f, s1 = -2.0f;

  // Reference.
  std::vector<double> t(size_t(M * R)), y(y0.begin(), y0.end());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t i = 0; i < R; ++i) {
      const Stored &a = i < r0 ? a0 : a1;
      const int64_t row = i < r0 ? i : i - r0;
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += double(x[m * ldx + k]) * a.values[row * K + k];
      t[m * R + i] = acc;
    }
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < n0; ++n) {
      double acc = 0;
      for (int64_t i = 0; i < r0; ++i)
        acc += t[m * R + i] * b0.values[i * n0 + n];
      y[m * ldy + n] += s0 * acc;
    }
    for (int64_t n = 0; n < n1; ++n) {
      double acc = 0;
      for (int64_t i = 0; i < r1; ++i)
        acc += t[m * R + r0 + i] * b1.values[i * n1 + n];
      y[m * ldy + n0 + n] += s1 * acc;
    }
  }

  std::vector<float> results[2];
  for (int threads : {1, 3}) {
    rt::ThreadPool pool(threads);
    std::vector<float> got(y0), tt(size_t(M * ldt), 0.0f);
    LoraDown downs[2] = {{a0.m, 0}, {a1.m, r0}};
    loraDownOn(path, x.data(), M, ldx, tt.data(), ldt, downs, 2, &pool);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < R; ++i)
        ASSERT_NEAR(tt[m * ldt + i], t[m * R + i],
                    1e-5 * (1.0 + std::fabs(t[m * R + i])))
            << "t[" << m << "][" << i << "]";
    LoraUp ups[2] = {{0, b0.m, got.data(), s0}, {r0, b1.m, got.data() + n0, s1}};
    loraUpOn(path, tt.data(), M, ldt, ldy, ups, 2, &pool);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < ldy; ++n)
        ASSERT_NEAR(got[m * ldy + n], y[m * ldy + n],
                    1e-4 * (1.0 + std::fabs(y[m * ldy + n])))
            << "y[" << m << "][" << n << "]";
    results[threads == 1 ? 0 : 1] = got;
  }
  EXPECT_EQ(results[0], results[1]) << "threads change the result";
}

TEST(Lora, F16EveryShape) {
  for (KernelIsa path : paths())
    for (int64_t M : {1, 2, 3, 4, 5, 9})
      for (int64_t K : {1, 7, 16, 33, 128})
        checkCase(path, M, K, K % 3 + 1, 4, 50, 64 + (K % 5), false, 32);
}

TEST(Lora, F16Ranks) {
  for (KernelIsa path : paths())
    for (int64_t r : {1, 3, 4, 5, 8, 32})
      for (int64_t M : {1, 6})
        checkCase(path, M, 96, r, r + 1, 200, 17, false, 32);
}

TEST(Lora, Q8Groups) {
  for (KernelIsa path : paths())
    for (int group : {32, 64, 128})
      for (int64_t M : {1, 2, 4, 7})
        checkCase(path, M, 256, 4, 9, 128, 384, true, group);
}

TEST(Lora, Q8DecodeLongRows) {
  // Decode walks a q8 row's group scales in chunks of 64 groups: rows of
  // 66 groups (a chunk and a tail), ranks 4 + 1 and 7. (Longer rows would
  // need a looser bound than checkCase's: t grows as √K.)
  for (KernelIsa path : paths())
    checkCase(path, 1, 66 * 32, 5, 7, 66 * 32, 64, true, 32);
}

TEST(Lora, Q8DecodeRowBlocks) {
  // Decode takes q8 rows 8, then 4, then 1 at a time (down and up): ranks
  // 13 (8 + 4 + 1) and 12 (8 + 4), with column ranges that end mid-row.
  for (KernelIsa path : paths())
    for (int group : {32, 64})
      checkCase(path, 1, 256, 13, 12, 192, 320, true, group);
}

TEST(Lora, WideAndThreaded) {
  // Decode and prefill of an afm7-like projection: enough work for the
  // pool, N spanning many 64-column units.
  for (KernelIsa path : paths())
    for (int64_t M : {1, 8})
      for (bool q8 : {false, true})
        checkCase(path, M, 512, 32, 16, 1024, 320, q8, 32);
}

TEST(Lora, AdaptersOnOneProjection) {
  // Two adapters on one projection: their ups add to the same columns, one
  // after the other in each column block, however many threads run.
  // N: q8 needs whole groups of 32 (the .fmba loader refuses anything else;
  // 200 tripped packedRowBytes' assert), and 224 is no multiple of the
  // up kernel's column unit, so a partial block stays covered.
  const int64_t M = 3, K = 128, N = 224, r0 = 8, r1 = 4;
  for (KernelIsa path : paths()) {
    SCOPED_TRACE(kernelIsaName(path));
    const Stored a0 = make(r0, K, false, 32, 21), a1 = make(r1, K, true, 32, 22);
    const Stored b0 = make(r0, N, true, 32, 23), b1 = make(r1, N, false, 32, 24);
    const std::vector<float> x = randomRows(M, K, 25), y0 = randomRows(M, N, 26);
    std::vector<double> y(y0.begin(), y0.end());
    for (int64_t m = 0; m < M; ++m)
      for (int adapter = 0; adapter < 2; ++adapter) {
        const Stored &a = adapter ? a1 : a0, &b = adapter ? b1 : b0;
        const int64_t r = adapter ? r1 : r0;
        const double s = adapter ? -0.5 : 1.5;
        for (int64_t i = 0; i < r; ++i) {
          double t = 0;
          for (int64_t k = 0; k < K; ++k)
            t += double(x[m * K + k]) * a.values[i * K + k];
          for (int64_t n = 0; n < N; ++n)
            y[m * N + n] += s * t * b.values[i * N + n];
        }
      }
    std::vector<float> got[2];
    for (int threads : {1, 3}) {
      rt::ThreadPool pool(threads);
      std::vector<float> t(size_t(M * (r0 + r1))), out(y0);
      LoraDown downs[2] = {{a0.m, 0}, {a1.m, r0}};
      loraDownOn(path, x.data(), M, K, t.data(), r0 + r1, downs, 2, &pool);
      LoraUp ups[2] = {{0, b0.m, out.data(), 1.5f}, {r0, b1.m, out.data(), -0.5f}};
      loraUpOn(path, t.data(), M, r0 + r1, N, ups, 2, &pool);
      for (int64_t i = 0; i < M * N; ++i)
        ASSERT_NEAR(out[i], y[i], 1e-4 * (1 + std::fabs(y[i]))) << i;
      got[threads == 1 ? 0 : 1] = out;
    }
    EXPECT_EQ(got[0], got[1]);
  }
}

TEST(Lora, DispatchMatchesGeneric) {
  const Stored a = make(8, 64, false, 32, 9), b = make(8, 100, false, 32, 10);
  const std::vector<float> x = randomRows(3, 64, 11);
  std::vector<float> t1(24), t2(24), y1(300, 1.0f), y2(300, 1.0f);
  LoraDown d{a.m, 0};
  loraDown(x.data(), 3, 64, t1.data(), 8, &d, 1, nullptr);
  loraDownOn(KernelIsa::Generic, x.data(), 3, 64, t2.data(), 8, &d, 1, nullptr);
  for (int i = 0; i < 24; ++i)
    EXPECT_NEAR(t1[i], t2[i], 1e-5 * (1 + std::fabs(t2[i])));
  LoraUp u1{0, b.m, y1.data(), 0.5f}, u2{0, b.m, y2.data(), 0.5f};
  loraUp(t2.data(), 3, 8, 100, &u1, 1, nullptr);
  loraUpOn(KernelIsa::Generic, t2.data(), 3, 8, 100, &u2, 1, nullptr);
  for (int i = 0; i < 300; ++i)
    EXPECT_NEAR(y1[i], y2[i], 1e-5 * (1 + std::fabs(y2[i])));
  EXPECT_STRNE(loraPathName(), "");
}

TEST(Lora, Q8LayoutIsTheQuantizers) {
  // The kernels read q8 rows as dequantizeRow does.
  const Stored a = make(3, 96, true, 32, 12);
  std::vector<float> row(96);
  for (int64_t r = 0; r < 3; ++r) {
    dequantizeRow(a.bytes.data() +
                      r * packedRowBytes({8, 32, QuantGrid::Balanced}, 96),
                  {8, 32, QuantGrid::Balanced}, 96, row.data());
    for (int64_t c = 0; c < 96; ++c)
      EXPECT_NEAR(row[c], a.values[r * 96 + c], 1e-6);
  }
}

} // namespace
} // namespace fm::kernels
