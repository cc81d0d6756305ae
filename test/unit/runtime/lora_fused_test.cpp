// The CPU device's fused LoRA matmul (hal/cpu/CpuLora.cpp): three stacked
// weights (a fused projection) in every base format with two adapters
// (f16 and q8, different scales, ranks 8 and 5) on some of them, for decode
// and prefill rows, strided x and y, 1 and 2 threads, against a double
// reference of x·Wᵀ + bias + Σ s·B(A·x) over the stored values; and a run
// on two threads is exactly one thread-pool dispatch (the side path has no
// hand-offs of its own).
#include "PackedWeights.h"
#include "base/ThreadPool.h"
#include "hal/cpu/CpuDevice.h"
#include "kernels/lora.h"
#include "kernels/matmul.h"
#include "kernels/qgemm.h"
#include "kernels/qmatmul_problem.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace fm::test {
namespace {

using kernels::QActivations;
using kernels::QuantFormat;
using kernels::QuantGrid;

double halfValue(uint16_t h) {
  // IEEE binary16 by its definition (not the kernels' conversion).
  const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
  return sign ? -v : v;
}

enum class Base { F32, F16, Q2, Q4, Q8 };

const char *baseName(Base b) {
  switch (b) {
  case Base::F32: return "f32";
  case Base::F16: return "f16";
  case Base::Q2: return "w2";
  case Base::Q4: return "w4";
  case Base::Q8: return "w8";
  }
  return "?";
}

QuantFormat baseFormat(Base b) {
  return b == Base::Q2   ? QuantFormat{2, 32, QuantGrid::Balanced}
         : b == Base::Q4 ? QuantFormat{4, 64, QuantGrid::Affine}
                         : QuantFormat{8, 32, QuantGrid::Balanced};
}

// Bytes laid out one after another, 64-byte aligned.
struct Bytes {
  std::vector<uint8_t> data;
  uint64_t append(const void *p, size_t n) {
    const uint64_t at = (data.size() + 63) / 64 * 64;
    data.resize(at + n);
    std::memcpy(data.data() + at, p, n);
    return at;
  }
};

// A LoRA matrix [rows][cols] stored f16 or q8 (group 32) at `offset`, and
// the values it stores.
struct LoraStored {
  uint64_t offset = 0, bytes = 0;
  bool q8 = false;
  int64_t rows = 0, cols = 0;
  std::vector<double> values;
};

LoraStored storeLora(Bytes &out, int64_t rows, int64_t cols, bool q8,
                     std::mt19937 &rng) {
  std::normal_distribution<float> nd(0.0f, 0.3f);
  std::vector<float> w(size_t(rows * cols));
  for (float &v : w)
    v = nd(rng);
  LoraStored s;
  s.q8 = q8;
  s.rows = rows;
  s.cols = cols;
  s.values.resize(w.size());
  if (!q8) {
    std::vector<uint16_t> h(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      h[i] = kernels::floatToHalf(w[i]);
      s.values[i] = halfValue(h[i]);
    }
    s.bytes = h.size() * 2;
    s.offset = out.append(h.data(), s.bytes);
    return s;
  }
  const QuantFormat f{8, 32, QuantGrid::Balanced};
  const size_t rowBytes = kernels::packedRowBytes(f, cols);
  std::vector<uint8_t> q(rows * rowBytes);
  kernels::quantizeRows(w.data(), rows, cols, f, q.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const uint8_t *row = q.data() + r * rowBytes;
      uint16_t h;
      std::memcpy(&h, row + cols + 2 * (c / 32), 2);
      s.values[r * cols + c] = (double(row[c]) - 127.5) * halfValue(h);
    }
  s.bytes = q.size();
  s.offset = out.append(q.data(), s.bytes);
  return s;
}

hal::WeightDesc loraDesc(hal::Buffer *buffer, const LoraStored &s) {
  hal::WeightDesc d;
  d.buffer = buffer;
  d.offset = s.offset;
  d.bytes = s.bytes;
  d.kind = s.q8 ? hal::WeightKind::Quant : hal::WeightKind::F16;
  d.format = QuantFormat{8, 32, QuantGrid::Balanced};
  d.shape = {s.rows, s.cols};
  return d;
}

struct Case {
  Base base;
  std::vector<int64_t> rows; // the stacked weights' outputs
  int64_t M, maxRows, xStride, yStride;
  int threads;
  bool bias, accumulate, q8Second;
  /// Packed: the weights come with their Panel16 copies, as fmc writes
  /// them (WeightDesc::beside), which the kernel reads instead of making.
  bool copies = false;
};

std::string caseName(const Case &c) {
  std::string s = std::string(baseName(c.base)) + " rows";
  for (int64_t r : c.rows)
    s += " " + std::to_string(r);
  return s + " M " + std::to_string(c.M) + "/" + std::to_string(c.maxRows) +
         " x stride " + std::to_string(c.xStride) + " y stride " +
         std::to_string(c.yStride) + " threads " + std::to_string(c.threads) +
         (c.bias ? " bias" : "") + (c.accumulate ? " accumulate" : "") +
         (c.q8Second ? " q8" : "") + (c.copies ? " copies" : "");
}

// Runs one case; returns the thread pool's dispatches during the run.
uint64_t runCase(const Case &c) {
  SCOPED_TRACE(caseName(c));
  const int64_t K = 256;
  int64_t N = 0;
  for (int64_t r : c.rows)
    N += r;
  const bool packed = c.base == Base::Q2 || c.base == Base::Q4 || c.base == Base::Q8;
  const QuantFormat f = baseFormat(c.base);
  // The base weights (normal values) and x, with double references.
  const kernels::testing::QMatmulProblem p(f, c.M, K, N, 7 + uint32_t(c.M));
  std::vector<double> w(N * K); // the stored base values
  Bytes weights;
  if (packed) {
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = p.wdq[i];
    weights.append(p.w.data(), p.w.size());
  } else if (c.base == Base::F16) {
    std::vector<uint16_t> h(N * K);
    for (size_t i = 0; i < h.size(); ++i) {
      h[i] = kernels::floatToHalf(p.wdq[i]);
      w[i] = halfValue(h[i]);
    }
    weights.append(h.data(), h.size() * 2);
  } else {
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = p.wdq[i];
    weights.append(p.wdq.data(), p.wdq.size() * 4);
  }
  std::vector<float> bias(N);
  for (int64_t n = 0; n < N; ++n)
    bias[n] = 0.01f * float(n % 13) - 0.05f;
  const uint64_t biasOffset = weights.append(bias.data(), bias.size() * 4);
  std::vector<uint64_t> copyAt;
  if (packed && c.copies) {
    int64_t row0 = 0;
    for (int64_t rows : c.rows) {
      const std::vector<uint8_t> copy = kernels::repackForGemm(
          kernels::GemmLayout::Panel16, f, rows, K,
          p.w.data() + row0 * kernels::packedRowBytes(f, K));
      copyAt.push_back(weights.append(copy.data(), copy.size()));
      row0 += rows;
    }
  }

  // Adapter 1 (f16, rank 8) on every weight but the last of three; adapter
  // 2 (rank 5, f16 or q8) on the first and the last. Each adapter's A's lie
  // back to back (one down product), then its Bᵀ's.
  std::mt19937 rng(99);
  struct Term {
    size_t weight;
    LoraStored a, bt;
    float scale;
  };
  std::vector<Term> terms;
  const size_t nw = c.rows.size();
  for (int adapter = 0; adapter < 2; ++adapter) {
    const int64_t rank = adapter == 0 ? 8 : 5;
    const bool q8 = adapter == 1 && c.q8Second;
    const float scale = adapter == 0 ? 0.5f : -1.25f;
    std::vector<size_t> on;
    for (size_t i = 0; i < nw; ++i)
      if (adapter == 0 ? (nw < 3 || i + 1 < nw) : (i == 0 || i + 1 == nw))
        on.push_back(i);
    std::vector<LoraStored> as;
    for (size_t i = 0; i < on.size(); ++i)
      as.push_back(storeLora(weights, rank, K, q8, rng));
    for (size_t i = 0; i < on.size(); ++i)
      terms.push_back({on[i], as[i], storeLora(weights, rank, c.rows[on[i]], q8, rng),
                       scale});
  }

  hal::CpuDevice device;
  auto wbuf = device.importWeights(weights.data.data(), weights.data.size());
  EXPECT_TRUE(wbuf.isOk());
  if (!wbuf.isOk())
    return 0;
  const uint64_t yOffset = uint64_t(4 * c.maxRows * c.xStride + 64) / 64 * 64;
  auto arena = device.allocate(yOffset + 4 * c.maxRows * c.yStride,
                               hal::MemorySpace::Host);
  EXPECT_TRUE(arena.isOk());
  if (!arena.isOk())
    return 0;
  float *x = reinterpret_cast<float *>((*arena)->host());
  float *y = reinterpret_cast<float *>((*arena)->host() + yOffset);
  for (int64_t m = 0; m < c.M; ++m)
    std::memcpy(x + m * c.xStride, p.x.data() + m * K, 4 * K);
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < c.yStride; ++n)
      y[m * c.yStride + n] = 0.25f * float((m + n) % 5) - 0.5f;
  const std::vector<float> y0(y, y + c.M * c.yStride);

  hal::MatmulDesc d;
  d.x = {arena->get(), 0, c.xStride, K};
  d.y = {arena->get(), yOffset, c.yStride, N};
  d.k = K;
  d.n = N;
  d.maxRows = c.maxRows;
  d.accumulate = c.accumulate;
  d.activations = QActivations::Int8x2;
  if (c.bias) {
    d.bias.buffer = wbuf->get();
    d.bias.offset = biasOffset;
    d.bias.bytes = 4 * N;
    d.bias.shape = {N};
  }
  std::vector<int64_t> col0(nw);
  int64_t col = 0;
  uint64_t off = 0;
  for (size_t i = 0; i < nw; ++i) {
    col0[i] = col;
    hal::WeightDesc wd;
    wd.buffer = wbuf->get();
    wd.offset = off;
    const uint64_t rowBytes = packed ? kernels::packedRowBytes(f, K)
                              : c.base == Base::F16 ? 2 * K
                                                    : 4 * K;
    wd.bytes = c.rows[i] * rowBytes;
    wd.kind = packed ? hal::WeightKind::Quant
              : c.base == Base::F16 ? hal::WeightKind::F16
                                    : hal::WeightKind::F32;
    wd.format = f;
    wd.shape = {c.rows[i], K};
    if (!copyAt.empty()) {
      wd.beside.layout = kernels::kPanel16LayoutName;
      wd.beside.offset = copyAt[i];
      wd.beside.bytes = kernels::gemmPackedBytes(kernels::GemmLayout::Panel16, f,
                                                 c.rows[i], K);
    }
    d.weights.push_back(wd);
    off += wd.bytes;
    col += c.rows[i];
  }
  for (const Term &t : terms) {
    hal::LoraTerm lt;
    lt.a = loraDesc(wbuf->get(), t.a);
    lt.bt = loraDesc(wbuf->get(), t.bt);
    lt.rank = t.a.rows;
    lt.col0 = col0[t.weight];
    lt.rows = c.rows[t.weight];
    lt.scale = t.scale;
    d.lora.push_back(lt);
  }
  auto kernel = device.prepareMatmul(d);
  EXPECT_TRUE(kernel.isOk()) << kernel.message();
  if (!kernel.isOk())
    return 0;
  hal::QueueOptions qo;
  qo.threads = c.threads;
  qo.scratchBytes = (*kernel)->scratchBytes();
  auto queue = device.createQueue(qo);
  EXPECT_TRUE(queue.isOk());
  if (!queue.isOk())
    return 0;
  EXPECT_TRUE((*kernel)->beforeFirstRun(**queue).isOk());
  if (!copyAt.empty())
    EXPECT_EQ(device.gemmWeights().bytes(), 0u) << "a copy was made";
  rt::ThreadPool *pool = static_cast<hal::CpuQueue &>(**queue).pool();
  const uint64_t before = pool ? pool->dispatches() : 0;
  hal::Launch l;
  l.rows = c.M;
  EXPECT_TRUE((*kernel)->run(**queue, l).isOk());
  const uint64_t dispatches = (pool ? pool->dispatches() : 0) - before;

  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        ref += w[n * K + k] * p.x[m * K + k];
        mag += std::fabs(w[n * K + k] * p.x[m * K + k]);
      }
      if (c.bias)
        ref += bias[n];
      if (c.accumulate)
        ref += y0[m * c.yStride + n];
      for (const Term &t : terms) {
        const int64_t local = n - col0[t.weight];
        if (local < 0 || local >= c.rows[t.weight])
          continue;
        for (int64_t i = 0; i < t.a.rows; ++i) {
          double ti = 0, tm = 0;
          for (int64_t k = 0; k < K; ++k) {
            ti += t.a.values[i * K + k] * p.x[m * K + k];
            tm += std::fabs(t.a.values[i * K + k] * p.x[m * K + k]);
          }
          const double b = t.scale * t.bt.values[i * t.bt.cols + local];
          ref += b * ti;
          mag += std::fabs(b) * tm;
        }
      }
      // The base's activation rounding (packed weights: int8x2) and f32
      // summation.
      const double tol = (packed ? p.tolerance(m * N + n, QActivations::Int8x2)
                                 : 0.0) +
                         2e-5 * (mag + 1.0);
      const double got = y[m * c.yStride + n];
      EXPECT_LE(std::fabs(got - ref), tol) << "row " << m << " column " << n;
      if (std::fabs(got - ref) > tol)
        return dispatches;
    }
  // Columns past N of a strided y are untouched.
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = N; n < c.yStride; ++n)
      EXPECT_EQ(y[m * c.yStride + n], y0[m * c.yStride + n]);
  return dispatches;
}

TEST(LoraFused, EveryFormatDecodeAndPrefillMatchTheReference) {
  for (Base base : {Base::F32, Base::F16, Base::Q2, Base::Q4, Base::Q8})
    for (int threads : {1, 2})
      for (int64_t M : {int64_t(1), int64_t(5), int64_t(40)}) {
        // Panel-aligned segments (prefill of packed weights: the qgemm
        // copy), dense x and y, a q8 second adapter.
        Case a{base, {64, 32, 64}, M, M, 256, 160, threads, false, false, true};
        // Segment edges off the 16-row panels (the row kernels), strided x
        // and y, bias, accumulate, f16 adapters only (q8 Bᵀ needs whole
        // groups of 32 columns).
        Case b{base, {64, 40, 24}, M, 40, 260, 136, threads, true, true, false};
        runCase(a);
        runCase(b);
      }
}

// Weights with their Panel16 copies in the artifact: prefill reads those
// (no copy is made) and matches the reference, on panel-aligned segments
// and off them (the row kernel).
TEST(LoraFused, TheArtifactsCopiesAreReadInPlace) {
  for (Base base : {Base::Q2, Base::Q4, Base::Q8})
    for (int64_t M : {int64_t(1), int64_t(40)}) {
      Case a{base, {64, 32, 64}, M, 40, 256, 160, 2, false, false, true};
      Case b{base, {64, 40, 24}, M, 40, 260, 136, 2, true, true, false};
      a.copies = b.copies = true;
      runCase(a);
      runCase(b);
    }
}

TEST(LoraFused, OneDispatchPerRunOnTwoThreads) {
  for (Base base : {Base::F32, Base::F16, Base::Q2, Base::Q8})
    for (int64_t M : {int64_t(1), int64_t(40)}) {
      Case c{base, {64, 32, 64}, M, M, 256, 160, 2, false, false, true};
      EXPECT_EQ(runCase(c), 1u) << caseName(c);
    }
}

} // namespace
} // namespace fm::test
