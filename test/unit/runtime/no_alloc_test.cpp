// The HAL's contract that Kernel::run allocates nothing (runtime/hal/
// Device.h), checked for the CPU matmul kernel over packed weights: this
// executable replaces glibc's malloc family with counting wrappers, and each
// run happens on a fresh thread, so a kernel that grew a thread-local buffer
// inside run (qgemm's and qmatmul's prepared activations did) is counted.
#include "PackedWeights.h"
#include "base/ThreadPool.h"
#include "hal/cpu/CpuDevice.h"
#include "hal/cpu/QuantMoe.h"
#include "kernels/moe.h"
#include "kernels/quantize.h"
#include "kernels/qgemm.h"
#include "kernels/qmatmul_problem.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

// glibc's own allocator entry points, which the wrappers forward to.
extern "C" {
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);
}

namespace {
std::atomic<bool> gCounting{false};
std::atomic<long> gAllocations{0};
void count() {
  if (gCounting.load(std::memory_order_relaxed))
    gAllocations.fetch_add(1, std::memory_order_relaxed);
}
} // namespace

extern "C" {
void *malloc(size_t n) {
  count();
  return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
  count();
  return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
  count();
  return __libc_realloc(p, n);
}
void *aligned_alloc(size_t alignment, size_t n) {
  count();
  return __libc_memalign(alignment, n);
}
void *memalign(size_t alignment, size_t n) {
  count();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void **out, size_t alignment, size_t n) {
  count();
  void *p = __libc_memalign(alignment, n);
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}
void free(void *p) { __libc_free(p); }
}

namespace fm::test {
namespace {

using kernels::QActivations;
using kernels::QuantFormat;
using kernels::QuantGrid;
using kernels::testing::QMatmulProblem;

// Allocations made while fn runs on a new thread (the thread's own start
// and end are not counted).
template <typename F> long allocationsOnAFreshThread(F &&fn) {
  std::atomic<bool> go{false}, done{false};
  long counted = 0;
  std::thread t([&] {
    while (!go.load())
      std::this_thread::yield();
    gAllocations.store(0);
    gCounting.store(true);
    fn();
    gCounting.store(false);
    counted = gAllocations.load();
    done.store(true);
  });
  go.store(true);
  t.join();
  EXPECT_TRUE(done.load());
  return counted;
}

TEST(NoAlloc, TheCountingHookSeesAllocations) {
  // Without this the other tests could pass with a hook that is not live.
  // (Through volatile pointers: the compiler may drop an allocation whose
  // memory nothing reads.)
  EXPECT_GE(allocationsOnAFreshThread([] {
              void *volatile a = std::malloc(1000);
              void *volatile b = std::aligned_alloc(64, 4096);
              std::free(a);
              std::free(b);
            }),
            2);
  // qgemm without scratch grows its thread-local buffer: what a prepared
  // kernel must not do.
  const QuantFormat f{4, 32, QuantGrid::Balanced};
  const QMatmulProblem p(f, 8, 128, 32, 5);
  const std::vector<uint8_t> w = kernels::repackForGemm(
      kernels::GemmLayout::Panel16, f, p.N, p.K, p.w.data());
  std::vector<float> y(p.M * p.N);
  EXPECT_GE(allocationsOnAFreshThread([&] {
              kernels::qgemm(p.x.data(), p.M, p.K, w.data(),
                             kernels::GemmLayout::Panel16, f, p.N, y.data(),
                             false, nullptr);
            }),
            1);
}

// The CPU matmul kernel over packed weights (two weights apart: two calls;
// x and y strided, so that the gather and the dense-y scratch are used
// too), for decode (1 row) and prefill (the GEMM over the Panel16 copies),
// on 1 and 2 threads, run at its most rows and at fewer: no allocation, and
// still the reference's values.
TEST(NoAlloc, PackedMatmulKernelRunsWithoutAllocating) {
  const int64_t K = 256, N0 = 48, N1 = 32, N = N0 + N1, M = 40;
  // w4 g32 balanced with int11: AMX's pair-tile layout, where AMX runs.
  for (QuantFormat f : {QuantFormat{2, 64, QuantGrid::Balanced},
                        QuantFormat{4, 32, QuantGrid::Affine},
                        QuantFormat{4, 32, QuantGrid::Balanced}}) {
    const QMatmulProblem p(f, M, K, N, 3);
    const size_t gap = 64;
    const std::vector<uint8_t> data = splitPackedRows(p.w, f, K, N0, gap);
    for (QActivations act :
         {QActivations::Int8x2, QActivations::Int8, QActivations::Int11})
      for (int64_t maxRows : {int64_t(1), M})
        for (int threads : {1, 2}) {
          SCOPED_TRACE(kernels::testing::formatName(f) + " " +
                       kernels::qActivationsName(act) + " max rows " +
                       std::to_string(maxRows) + " threads " +
                       std::to_string(threads));
          hal::CpuDevice device;
          auto weights = device.importWeights(data.data(), data.size());
          ASSERT_TRUE(weights.isOk());
          const int64_t xStride = K + 16, yStride = N + 8;
          auto arena = device.allocate(4 * M * (xStride + yStride),
                                       hal::MemorySpace::Host);
          ASSERT_TRUE(arena.isOk());
          float *x = reinterpret_cast<float *>((*arena)->host());
          for (int64_t r = 0; r < M; ++r)
            std::memcpy(x + r * xStride, p.x.data() + r * K, 4 * K);
          hal::MatmulDesc d;
          d.x = {arena->get(), 0, xStride, K};
          d.y = {arena->get(), uint64_t(4 * M * xStride), yStride, N};
          d.k = K;
          d.n = N;
          d.maxRows = maxRows;
          d.activations = act;
          addSplitWeights(d, weights->get(), f, K, N0, N1, gap);
          auto kernel = device.prepareMatmul(d);
          ASSERT_TRUE(kernel.isOk()) << kernel.message();
          hal::QueueOptions qo;
          qo.threads = threads;
          qo.scratchBytes = (*kernel)->scratchBytes();
          auto queue = device.createQueue(qo);
          ASSERT_TRUE(queue.isOk());
          // As the executor does before the program's first run: a kernel
          // for several rows makes its Panel16 copies and then runs qgemm.
          ASSERT_TRUE((*kernel)->beforeFirstRun(**queue).isOk());
          EXPECT_EQ(device.prefillCopiesMade() > 0, maxRows > 1)
              << "the GEMM path is not under test";
          for (int64_t rows : {maxRows, (maxRows + 1) / 2}) {
            hal::Launch l;
            l.rows = rows;
            Status st = Status::ok();
            EXPECT_EQ(allocationsOnAFreshThread(
                          [&] { st = (*kernel)->run(**queue, l); }),
                      0)
                << rows << " rows";
            ASSERT_TRUE(st.isOk()) << st.message();
            const float *y = x + M * xStride;
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t c = 0; c < N; ++c)
                ASSERT_LE(std::fabs(double(y[r * yStride + c]) - p.ref[r * N + c]),
                          p.tolerance(r * N + c, act))
                    << "row " << r << " column " << c;
          }
        }
  }
}

// The packed Moe (hal/cpu/QuantMoe.h) as the CPU Moe kernel runs it: the
// experts' matmuls over Panel16 copies (qgemm) with their scratch carved
// from the caller's (MoeShape::opsScratchBytes, one region per thread), on
// 1 and 2 threads (2: the experts in parallel), 33 rows and 1: no
// allocation, and within the int8x2 bound of kernels::moe over the
// dequantized weights. Before, each expert matmul grew the kernels'
// thread-local buffers and quantMoe its handle table.
TEST(NoAlloc, PackedMoeWithGemmCopiesRunsWithoutAllocating) {
  constexpr int64_t K = 64, E = 4, I = 64, Is = 128, topK = 2;
  const QuantFormat f{4, 32, QuantGrid::Balanced};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto fill = [&](int64_t n, float scale) {
    std::vector<float> v(n);
    for (float &x : v)
      x = scale * normal(rng);
    return v;
  };
  struct Weight {
    std::vector<uint8_t> packed, panel;
    std::vector<float> dequant;
  };
  // [N][K] in f, its Panel16 copy and its dequantized values.
  auto make = [&](int64_t N, int64_t KIn, float scale) {
    Weight w;
    const std::vector<float> v = fill(N * KIn, scale);
    const size_t rowBytes = kernels::packedRowBytes(f, KIn);
    w.packed.resize(N * rowBytes);
    kernels::quantizeRows(v.data(), N, KIn, f, w.packed.data());
    w.panel = kernels::repackForGemm(kernels::GemmLayout::Panel16, f, N, KIn,
                                     w.packed.data());
    w.dequant.resize(N * KIn);
    for (int64_t r = 0; r < N; ++r)
      kernels::dequantizeRow(w.packed.data() + r * rowBytes, f, KIn,
                             &w.dequant[r * KIn]);
    return w;
  };
  const std::vector<float> router = fill(E * K, 0.3f);
  const std::vector<float> sharedExpertGate = fill(K, 0.2f);
  std::vector<Weight> gateUp, down;
  for (int64_t e = 0; e < E; ++e) {
    gateUp.push_back(make(2 * I, K, 0.15f));
    down.push_back(make(K, I, 0.15f));
  }
  const Weight sg = make(Is, K, 0.1f), su = make(Is, K, 0.1f),
               sd = make(K, Is, 0.1f);
  auto quant = [&](const Weight &w, size_t offset, size_t panelOffset) {
    rt::WeightRef r;
    r.data = w.packed.data() + offset;
    r.kind = rt::WeightRef::Kind::Quant;
    r.format = f;
    r.gemm = w.panel.data() + panelOffset;
    return r;
  };
  auto f32 = [](const float *p) {
    rt::WeightRef r;
    r.data = p;
    return r;
  };
  std::vector<rt::WeightRef> gate, up, dn;
  std::vector<const void *> gateF, upF, downF;
  for (int64_t e = 0; e < E; ++e) {
    // Gate and up stacked (one [2I][K] call over the one copy); the up ref
    // keeps its own rows (no copy of its own: it is never called alone).
    gate.push_back(quant(gateUp[e], 0, 0));
    up.push_back(quant(gateUp[e], I * kernels::packedRowBytes(f, K), 0));
    up.back().gemm = nullptr;
    dn.push_back(quant(down[e], 0, 0));
    gateF.push_back(gateUp[e].dequant.data());
    upF.push_back(gateUp[e].dequant.data() + I * K);
    downF.push_back(down[e].dequant.data());
  }
  for (int64_t M : {int64_t(33), int64_t(1)})
    for (int threads : {1, 2}) {
      SCOPED_TRACE("M " + std::to_string(M) + " threads " +
                   std::to_string(threads));
      rt::ThreadPool pool(threads);
      const std::vector<float> x = fill(M * K, 1.0f);
      // The reference: kernels::moe over the dequantized f32 weights.
      kernels::MoeArgs r;
      r.shape = {M, K, E, I, topK, Is};
      r.x = x.data();
      r.xStride = K;
      std::vector<float> want(M * K);
      r.y = want.data();
      r.yStride = K;
      r.normTopk = true;
      r.router = router.data();
      r.gate = gateF.data();
      r.up = upF.data();
      r.down = downF.data();
      r.sharedGate = sg.dequant.data();
      r.sharedUp = su.dequant.data();
      r.sharedDown = sd.dequant.data();
      r.sharedExpertGate = sharedExpertGate.data();
      std::vector<float> refScratch(kernels::moeScratchFloats(r.shape));
      kernels::moe(r, refScratch.data(), &pool);

      rt::QuantMoeArgs a;
      a.shape = r.shape;
      a.x = x.data();
      a.xStride = K;
      std::vector<float> y(M * K);
      a.y = y.data();
      a.yStride = K;
      a.normTopk = true;
      a.router = f32(router.data());
      a.gate = gate.data();
      a.up = up.data();
      a.down = dn.data();
      a.sharedGate = quant(sg, 0, 0);
      a.sharedUp = quant(su, 0, 0);
      a.sharedDown = quant(sd, 0, 0);
      a.sharedExpertGate = f32(sharedExpertGate.data());
      a.shape.opsScratchBytes = rt::quantMoeMatmulScratchBytes(a);
      a.shape.threads = threads;
      ASSERT_GT(a.shape.opsScratchBytes, 0u);
      // 64-byte aligned, as a queue's scratch is.
      std::vector<float> scratch(rt::quantMoeScratchFloats(a.shape) + 16);
      float *aligned = reinterpret_cast<float *>(
          (reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
      EXPECT_EQ(allocationsOnAFreshThread(
                    [&] { rt::quantMoe(a, aligned, &pool); }),
                0);
      double maxWant = 0.0, maxErr = 0.0;
      for (int64_t i = 0; i < M * K; ++i) {
        maxWant = std::max(maxWant, std::fabs(double(want[i])));
        maxErr = std::max(maxErr, std::fabs(double(y[i]) - want[i]));
      }
      // As QuantMoe.MatchesTheMoeKernel: int8x2 activations cost ~1e-4 of
      // max |y| here; a wrong copy, slot or row errs by O(1).
      EXPECT_LT(maxErr, 1e-3 * maxWant);
    }
}

// The same packed Moe through the device, as a program runs it: CpuDevice::
// prepareMoe over weights in one imported buffer (each expert's gate and up
// stacked), the queue's scratch at the kernel's scratchBytes, beforeFirstRun
// (the Panel16 copies for several rows), then run at the kernel's most rows
// and at one, on 1 and 2 threads: no allocation, and within the int8x2 bound
// of kernels::moe over the dequantized weights. (The test above calls
// rt::quantMoe with scratch it sized itself; this one checks the sizes the
// kernel asks the queue for.)
TEST(NoAlloc, PackedMoeKernelRunsWithoutAllocating) {
  constexpr int64_t K = 64, E = 4, I = 64, Is = 128, topK = 2, M = 33;
  const QuantFormat f{4, 32, QuantGrid::Balanced};
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto fill = [&](int64_t n, float scale) {
    std::vector<float> v(n);
    for (float &x : v)
      x = scale * normal(rng);
    return v;
  };
  // One weights buffer: each piece at a 64-byte boundary.
  std::vector<uint8_t> bytes;
  auto place = [&](const void *p, size_t n) {
    const size_t at = (bytes.size() + 63) & ~size_t(63);
    bytes.resize(at + n);
    std::memcpy(bytes.data() + at, p, n);
    return at;
  };
  struct Piece {
    size_t offset = 0, size = 0;
    std::vector<int64_t> shape;
    bool quant = true;
  };
  // [N][K] packed in f (its dequantized values to *dequant), or f32.
  auto packed = [&](int64_t N, int64_t KIn, float scale,
                    std::vector<float> *dequant) {
    const std::vector<float> v = fill(N * KIn, scale);
    const size_t rowBytes = kernels::packedRowBytes(f, KIn);
    std::vector<uint8_t> q(N * rowBytes);
    kernels::quantizeRows(v.data(), N, KIn, f, q.data());
    dequant->resize(N * KIn);
    for (int64_t r = 0; r < N; ++r)
      kernels::dequantizeRow(q.data() + r * rowBytes, f, KIn,
                             dequant->data() + r * KIn);
    Piece p;
    p.offset = place(q.data(), q.size());
    p.size = q.size();
    p.shape = {N, KIn};
    return p;
  };
  auto dense = [&](const std::vector<float> &v, std::vector<int64_t> shape) {
    Piece p;
    p.offset = place(v.data(), 4 * v.size());
    p.size = 4 * v.size();
    p.shape = std::move(shape);
    p.quant = false;
    return p;
  };
  const std::vector<float> router = fill(E * K, 0.3f);
  const std::vector<float> sharedExpertGate = fill(K, 0.2f);
  std::vector<std::vector<float>> gateUpF(E), downF(E);
  std::vector<Piece> gateUp, down;
  for (int64_t e = 0; e < E; ++e) {
    gateUp.push_back(packed(2 * I, K, 0.15f, &gateUpF[e]));
    down.push_back(packed(K, I, 0.15f, &downF[e]));
  }
  std::vector<float> sgF, suF, sdF;
  const Piece sg = packed(Is, K, 0.1f, &sgF), su = packed(Is, K, 0.1f, &suF),
              sd = packed(K, Is, 0.1f, &sdF);
  const Piece routerP = dense(router, {E, K}),
              segP = dense(sharedExpertGate, {1, K});

  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    hal::CpuDevice device;
    auto weights = device.importWeights(bytes.data(), bytes.size());
    ASSERT_TRUE(weights.isOk());
    auto arena = device.allocate(4 * 2 * M * K, hal::MemorySpace::Host);
    ASSERT_TRUE(arena.isOk());
    auto desc = [&](const Piece &p, size_t skip = 0, int64_t rows = -1) {
      hal::WeightDesc w;
      w.buffer = weights->get();
      w.offset = p.offset + skip;
      w.shape = p.shape;
      if (rows >= 0)
        w.shape[0] = rows;
      w.bytes = p.quant ? w.shape[0] * kernels::packedRowBytes(f, w.shape[1])
                        : p.size;
      w.kind = p.quant ? hal::WeightKind::Quant : hal::WeightKind::F32;
      w.format = f;
      return w;
    };
    hal::MoeDesc d;
    d.x = {arena->get(), 0, K, K};
    d.y = {arena->get(), uint64_t(4 * M * K), K, K};
    d.router = desc(routerP);
    const size_t upSkip = I * kernels::packedRowBytes(f, K);
    for (int64_t e = 0; e < E; ++e) {
      d.gate.push_back(desc(gateUp[e], 0, I));
      d.up.push_back(desc(gateUp[e], upSkip, I));
      d.down.push_back(desc(down[e]));
    }
    d.hasShared = true;
    d.sharedGate = desc(sg);
    d.sharedUp = desc(su);
    d.sharedDown = desc(sd);
    d.sharedExpertGate = desc(segP);
    d.topK = topK;
    d.normTopk = true;
    d.maxRows = M;
    d.activations = QActivations::Int8x2;
    d.threads = threads;
    auto kernel = device.prepareMoe(d);
    ASSERT_TRUE(kernel.isOk()) << kernel.message();
    hal::QueueOptions qo;
    qo.threads = threads;
    qo.scratchBytes = (*kernel)->scratchBytes();
    auto queue = device.createQueue(qo);
    ASSERT_TRUE(queue.isOk());
    ASSERT_TRUE((*kernel)->beforeFirstRun(**queue).isOk());
    EXPECT_GT(device.prefillCopiesMade(), 0u) << "the GEMM path is not under test";
    float *x = reinterpret_cast<float *>((*arena)->host());
    const float *y = x + M * K;
    for (int64_t rows : {M, int64_t(1)}) {
      SCOPED_TRACE("rows " + std::to_string(rows));
      const std::vector<float> in = fill(rows * K, 1.0f);
      std::memcpy(x, in.data(), 4 * in.size());
      hal::Launch l;
      l.rows = rows;
      Status st = Status::ok();
      EXPECT_EQ(allocationsOnAFreshThread([&] { st = (*kernel)->run(**queue, l); }),
                0);
      ASSERT_TRUE(st.isOk()) << st.message();

      // The reference: kernels::moe over the dequantized f32 weights.
      std::vector<const void *> gp, up, dp;
      for (int64_t e = 0; e < E; ++e) {
        gp.push_back(gateUpF[e].data());
        up.push_back(gateUpF[e].data() + I * K);
        dp.push_back(downF[e].data());
      }
      rt::ThreadPool pool(1);
      kernels::MoeArgs r;
      r.shape = {rows, K, E, I, topK, Is};
      r.x = in.data();
      r.xStride = K;
      std::vector<float> want(rows * K);
      r.y = want.data();
      r.yStride = K;
      r.normTopk = true;
      r.router = router.data();
      r.gate = gp.data();
      r.up = up.data();
      r.down = dp.data();
      r.sharedGate = sgF.data();
      r.sharedUp = suF.data();
      r.sharedDown = sdF.data();
      r.sharedExpertGate = sharedExpertGate.data();
      std::vector<float> refScratch(kernels::moeScratchFloats(r.shape));
      kernels::moe(r, refScratch.data(), &pool);
      double maxWant = 0.0, maxErr = 0.0;
      for (int64_t i = 0; i < rows * K; ++i) {
        maxWant = std::max(maxWant, std::fabs(double(want[i])));
        maxErr = std::max(maxErr, std::fabs(double(y[i]) - want[i]));
      }
      // As PackedMoeWithGemmCopiesRunsWithoutAllocating.
      EXPECT_LT(maxErr, 1e-3 * maxWant);
    }
  }
}

} // namespace
} // namespace fm::test
