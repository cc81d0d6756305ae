// The CUDA Moe kernel and matmul routing.
//  - CudaMoePlan.*: the host routing (MoePlan.h) against the plain C++ MoE
//    reference (kernels/moe_reference.h): the experts it picks, their
//    weights, the slot tables, and the output that the plan's gather /
//    SwiGLU / rank-order combine gives (run here, no GPU).
//  - CudaLaunchGeometry.*: the tensor-core GEMM's row threshold and that
//    its grid covers every output once, the matvec's grid (no GPU).
//  - GpuMoe.*: the HAL kernels on the GPU against the reference, rows past
//    f16's range on the tensor cores among them (skipped without a GPU).
#include "CudaEmu.h"
#include "hal/cuda/CudaDevice.h"
#include "hal/cuda/CudaLinear.h"
#include "hal/cuda/MoePlan.h"
#include "kernels/matmul.h"
#include "kernels/moe_reference.h"
#include "kernels/qmatmul.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

namespace fm::hal::cuda {
namespace {

using kernels::QuantFormat;
using kernels::QuantGrid;

std::vector<float> normals(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

kernels::reference::Moe randomMoe(int64_t K, int64_t I, int64_t E, int64_t topK,
                                  bool normTopk, int64_t sharedI, uint32_t seed) {
  kernels::reference::Moe m;
  m.hidden = K;
  m.intermediate = I;
  m.topK = topK;
  m.normTopk = normTopk;
  m.router = normals(size_t(E * K), seed, 0.3f);
  for (int64_t e = 0; e < E; ++e)
    m.experts.push_back({normals(size_t(I * K), seed + 10 + uint32_t(e), 0.1f),
                         normals(size_t(I * K), seed + 50 + uint32_t(e), 0.1f),
                         normals(size_t(K * I), seed + 90 + uint32_t(e), 0.1f)});
  m.sharedIntermediate = sharedI;
  if (sharedI > 0) {
    m.shared = {normals(size_t(sharedI * K), seed + 200, 0.1f),
                normals(size_t(sharedI * K), seed + 201, 0.1f),
                normals(size_t(K * sharedI), seed + 202, 0.1f)};
    m.sharedExpertGate = normals(size_t(K), seed + 203, 0.1f);
  }
  return m;
}

std::vector<float> logitsOf(const kernels::reference::Moe &m, const float *x,
                            int64_t M) {
  const int64_t K = m.hidden, E = int64_t(m.experts.size());
  std::vector<float> l(size_t(M * E));
  for (int64_t r = 0; r < M; ++r)
    for (int64_t e = 0; e < E; ++e) {
      double acc = 0;
      for (int64_t c = 0; c < K; ++c)
        acc += double(m.router[e * K + c]) * x[r * K + c];
      l[r * E + e] = float(acc);
    }
  return l;
}

TEST(CudaMoePlan, PicksTheReferencesExpertsAndGroupsSlotsByExpert) {
  const int64_t K = 24, E = 7, M = 30;
  for (int64_t topK : {1, 2, 4})
    for (bool norm : {false, true}) {
      const auto m = randomMoe(K, 8, E, topK, norm, 0, 7);
      const std::vector<float> x = normals(size_t(M * K), 8);
      const std::vector<float> logits = logitsOf(m, x.data(), M);
      MoePlan plan;
      planMoe(logits.data(), M, E, topK, norm, plan);
      ASSERT_EQ(plan.first.size(), size_t(E + 1));
      EXPECT_EQ(plan.first[0], 0);
      EXPECT_EQ(plan.first[E], M * topK);
      for (int64_t r = 0; r < M; ++r) {
        const std::vector<int64_t> want = m.route(x.data() + r * K);
        double sum = 0;
        for (int64_t j = 0; j < topK; ++j) {
          EXPECT_EQ(plan.choice[r * topK + j], want[j]) << "row " << r << " choice " << j;
          const int32_t slot = plan.rowSlot[r * topK + j];
          const int32_t e = plan.choice[r * topK + j];
          EXPECT_GE(slot, plan.first[e]);
          EXPECT_LT(slot, plan.first[e + 1]);
          EXPECT_EQ(plan.slotRow[slot], r);
          sum += plan.rowWeight[r * topK + j];
        }
        if (norm)
          EXPECT_NEAR(sum, 1.0, 1e-6);
        else
          EXPECT_LT(sum, 1.0 + 1e-6);
      }
      // Within an expert, rows ascending.
      for (int64_t e = 0; e < E; ++e)
        for (int32_t s = plan.first[e] + 1; s < plan.first[e + 1]; ++s)
          EXPECT_LT(plan.slotRow[s - 1], plan.slotRow[s]);
    }
}

TEST(CudaMoePlan, TiesKeepTheLowerExpert) {
  // Experts 1, 3 and 4 tie for the top; the lower two are kept, in order.
  const std::vector<float> logits = {0.5f, 2.0f, 1.0f, 2.0f, 2.0f};
  MoePlan plan;
  planMoe(logits.data(), 1, 5, 2, true, plan);
  EXPECT_EQ(plan.choice, (std::vector<int32_t>{1, 3}));
  EXPECT_FLOAT_EQ(plan.rowWeight[0], 0.5f);
  EXPECT_FLOAT_EQ(plan.rowWeight[1], 0.5f);
  EXPECT_EQ(plan.first, (std::vector<int32_t>{0, 0, 1, 1, 2, 2}));
}

// What the GPU kernel does with a plan (gather per expert, SwiGLU, combine
// in rank order, the gated shared expert), in plain loops, equals the
// reference.
TEST(CudaMoePlan, GatherAndCombineGiveTheReferenceOutput) {
  const int64_t K = 16, I = 12, E = 5, M = 9, Is = 10;
  for (bool shared : {false, true}) {
    const auto m = randomMoe(K, I, E, 2, !shared, shared ? Is : 0, 21);
    const std::vector<float> x = normals(size_t(M * K), 22);
    std::vector<float> want(size_t(M * K));
    m.run(x.data(), M, want.data(), false);
    const std::vector<float> logits = logitsOf(m, x.data(), M);
    MoePlan plan;
    planMoe(logits.data(), M, E, 2, !shared, plan);
    auto swiglu = [&](const kernels::reference::Expert &ex, int64_t width,
                      const float *in, double *out) {
      std::vector<double> act(static_cast<size_t>(width));
      for (int64_t i = 0; i < width; ++i) {
        double g = 0, u = 0;
        for (int64_t c = 0; c < K; ++c) {
          g += double(ex.gate[i * K + c]) * in[c];
          u += double(ex.up[i * K + c]) * in[c];
        }
        act[i] = g / (1 + std::exp(-g)) * u;
      }
      for (int64_t c = 0; c < K; ++c) {
        double acc = 0;
        for (int64_t i = 0; i < width; ++i)
          acc += double(ex.down[c * width + i]) * act[i];
        out[c] = acc;
      }
    };
    std::vector<double> o(size_t(M * 2 * K));
    for (int64_t e = 0; e < E; ++e)
      for (int32_t s = plan.first[e]; s < plan.first[e + 1]; ++s)
        swiglu(m.experts[e], I, x.data() + plan.slotRow[s] * K, o.data() + s * K);
    for (int64_t r = 0; r < M; ++r) {
      std::vector<double> so(size_t(K), 0.0);
      double g = 0;
      if (shared) {
        swiglu(m.shared, Is, x.data() + r * K, so.data());
        for (int64_t c = 0; c < K; ++c)
          g += double(m.sharedExpertGate[c]) * x[r * K + c];
        g = 1 / (1 + std::exp(-g));
      }
      for (int64_t c = 0; c < K; ++c) {
        double y = 0;
        for (int64_t j = 0; j < 2; ++j)
          y += plan.rowWeight[r * 2 + j] * o[plan.rowSlot[r * 2 + j] * K + c];
        y += g * so[c];
        EXPECT_NEAR(y, want[r * K + c], 1e-5) << r << "," << c;
      }
    }
  }
}

TEST(CudaLaunchGeometry, TensorCoresFromSixteenRowsOfPackedWeights) {
  EXPECT_FALSE(usesGemm(WeightKind::Quant, 1));
  EXPECT_FALSE(usesGemm(WeightKind::Quant, 15));
  EXPECT_TRUE(usesGemm(WeightKind::Quant, 16));
  EXPECT_TRUE(usesGemm(WeightKind::Quant, 100));
  EXPECT_FALSE(usesGemm(WeightKind::F32, 100));
  EXPECT_FALSE(usesGemm(WeightKind::F16, 100));
}

TEST(CudaLaunchGeometry, GemmGridCoversEveryOutputOnce) {
  for (int64_t M : {16, 17, 64, 100})
    for (int64_t N : {1, 37, 64, 65, 200}) {
      const LaunchGeometry g = gemmGeometry(M, N);
      EXPECT_EQ(g.block.x, 256u);
      EXPECT_EQ(g.block.y * g.block.z, 1u);
      EXPECT_EQ(g.grid.z, 1u);
      // Block (bx, by) owns rows [64·by, 64·by + 64) and columns
      // [64·bx, 64·bx + 64) (gemm.cu: m0, n0).
      std::vector<int> hits(size_t(M * N), 0);
      for (unsigned by = 0; by < g.grid.y; ++by)
        for (unsigned bx = 0; bx < g.grid.x; ++bx)
          for (int64_t r = 64 * by; r < std::min<int64_t>(M, 64 * by + 64); ++r)
            for (int64_t c = 64 * bx; c < std::min<int64_t>(N, 64 * bx + 64); ++c)
              ++hits[size_t(r * N + c)];
      for (int h : hits)
        ASSERT_EQ(h, 1) << "M=" << M << " N=" << N;
      // No block entirely outside Y.
      EXPECT_LT(int64_t(g.grid.x - 1) * 64, N);
      EXPECT_LT(int64_t(g.grid.y - 1) * 64, M);
    }
}

TEST(CudaLaunchGeometry, MatvecGridIsEightOutputsPerBlockPerRow) {
  const LaunchGeometry g = matvecGeometry(3, 37);
  EXPECT_EQ(g.grid.x, 5u);
  EXPECT_EQ(g.grid.y, 3u);
  EXPECT_EQ(g.block.x, 256u);
}

// ---------------------------------------------------------------------------
// On a GPU
// ---------------------------------------------------------------------------

class GpuMoe : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    emulated_ = fm_cuda_emu::installIfAsked(); // runtime.cuda.emulated
    auto d = CudaDevice::open(0);
    if (d)
      device_ = d->release();
    else
      why_ = d.message();
  }
  void SetUp() override {
    if (!device_)
      GTEST_SKIP() << "skipped: no CUDA device (" << why_ << ")";
    auto q = device_->createQueue({});
    ASSERT_TRUE(q.isOk()) << q.message();
    queue_ = std::move(*q);
  }
  std::unique_ptr<Buffer> upload(const void *data, uint64_t bytes) {
    auto b = device_->allocate(std::max<uint64_t>(bytes, 4), MemorySpace::Device);
    EXPECT_TRUE(b.isOk()) << b.message();
    if (!b)
      return nullptr;
    if (bytes)
      EXPECT_TRUE(device_->upload(**b, 0, data, bytes).isOk());
    return std::move(*b);
  }
  std::vector<float> download(const Buffer &b, size_t floats) {
    std::vector<float> out(floats);
    Status s = device_->download(b, 0, out.data(), floats * 4);
    EXPECT_TRUE(s.isOk()) << s.message();
    return out;
  }
  void run(const Expected<std::unique_ptr<Kernel>> &k, int64_t rows) {
    ASSERT_TRUE(k.isOk()) << k.message();
    Status s = (*k)->run(*queue_, Launch{rows, 0, nullptr});
    ASSERT_TRUE(s.isOk()) << s.message();
    s = static_cast<CudaQueue &>(*queue_).synchronize("the MoE under test");
    ASSERT_TRUE(s.isOk()) << s.message();
  }

  /// The weights of `m` in one device buffer, each f32 or packed in `f`
  /// (then `m`'s weights are replaced by their dequantized values, which
  /// the reference then uses).
  struct Weights {
    std::vector<uint8_t> bytes;
    std::unique_ptr<Buffer> buffer;
    std::vector<std::pair<uint64_t, uint64_t>> at; // offset, bytes
  };
  WeightDesc place(Weights &w, std::vector<float> &values, int64_t N, int64_t K,
                   const QuantFormat *f) {
    WeightDesc d;
    d.offset = w.bytes.size();
    d.shape = {N, K};
    if (f) {
      const size_t rowBytes = kernels::packedRowBytes(*f, K);
      w.bytes.resize(d.offset + N * rowBytes + 2); // +2: misaligned next
      kernels::quantizeRows(values.data(), N, K, *f, w.bytes.data() + d.offset);
      for (int64_t n = 0; n < N; ++n)
        kernels::dequantizeRow(w.bytes.data() + d.offset + n * rowBytes, *f, K,
                               values.data() + n * K);
      d.kind = WeightKind::Quant;
      d.format = *f;
      d.bytes = N * rowBytes;
    } else {
      w.bytes.resize((d.offset + 3) / 4 * 4);
      d.offset = w.bytes.size();
      w.bytes.resize(d.offset + values.size() * 4);
      std::memcpy(w.bytes.data() + d.offset, values.data(), values.size() * 4);
      d.kind = WeightKind::F32;
      d.bytes = values.size() * 4;
    }
    return d;
  }

  void checkMoe(int64_t M, int64_t topK, bool norm, int64_t sharedI,
                const QuantFormat *f, bool accumulate,
                kernels::QActivations act = kernels::QActivations::F32,
                std::vector<float> *output = nullptr);
  void checkMatmul(QuantFormat f, int64_t M, kernels::QActivations act,
                   const std::vector<float> &x, int64_t xStride, double rel);

  static CudaDevice *device_;
  static std::string why_;
  static bool emulated_; // on the block emulator (its driver counts)
  std::unique_ptr<Queue> queue_;
};
CudaDevice *GpuMoe::device_ = nullptr;
bool GpuMoe::emulated_ = false;
std::string GpuMoe::why_;

void GpuMoe::checkMoe(int64_t M, int64_t topK, bool norm, int64_t sharedI,
                      const QuantFormat *f, bool accumulate, kernels::QActivations act,
                      std::vector<float> *output) {
  const int64_t K = 128, I = 64, E = 6;
  auto m = randomMoe(K, I, E, topK, norm, sharedI, 31 + uint32_t(M));
  Weights w;
  MoeDesc d;
  // The router stays f32 (as the compiler keeps it); the experts packed.
  d.router = place(w, m.router, E, K, nullptr);
  for (int64_t e = 0; e < E; ++e) {
    d.gate.push_back(place(w, m.experts[e].gate, I, K, f));
    d.up.push_back(place(w, m.experts[e].up, I, K, f));
    d.down.push_back(place(w, m.experts[e].down, K, I, f));
  }
  if (sharedI > 0) {
    d.hasShared = true;
    d.sharedGate = place(w, m.shared.gate, sharedI, K, f);
    d.sharedUp = place(w, m.shared.up, sharedI, K, f);
    d.sharedDown = place(w, m.shared.down, K, sharedI, f);
    d.sharedExpertGate = place(w, m.sharedExpertGate, 1, K, nullptr);
  }
  w.buffer = upload(w.bytes.data(), w.bytes.size());
  for (WeightDesc *wd : {&d.router, &d.sharedGate, &d.sharedUp, &d.sharedDown,
                         &d.sharedExpertGate})
    wd->buffer = w.buffer.get();
  for (auto *list : {&d.gate, &d.up, &d.down})
    for (WeightDesc &wd : *list)
      wd.buffer = w.buffer.get();
  if (!d.hasShared)
    d.sharedGate.buffer = d.sharedUp.buffer = d.sharedDown.buffer =
        d.sharedExpertGate.buffer = nullptr;
  const int64_t xStride = K + 4, yStride = K + 12;
  const std::vector<float> xs = normals(size_t(M * xStride), 77);
  std::vector<float> x(size_t(M * K));
  for (int64_t r = 0; r < M; ++r)
    std::memcpy(x.data() + r * K, xs.data() + r * xStride, K * 4);
  std::vector<float> y0 = normals(size_t(M * yStride), 78), want(size_t(M * K));
  for (int64_t r = 0; r < M; ++r)
    std::memcpy(want.data() + r * K, y0.data() + r * yStride, K * 4);
  m.run(x.data(), M, want.data(), accumulate);
  auto xb = upload(xs.data(), xs.size() * 4), yb = upload(y0.data(), y0.size() * 4);
  d.x = {xb.get(), 0, xStride, K};
  d.y = {yb.get(), 0, yStride, K};
  d.topK = topK;
  d.normTopk = norm;
  d.accumulate = accumulate;
  d.maxRows = M;
  d.activations = act;
  run(device_->prepareMoe(d), M);
  const std::vector<float> got = download(*yb, y0.size());
  if (output)
    *output = got;
  // Matvec rows in f32; from kGemmMinRows rows an expert's activations go
  // through f16 on the tensor cores.
  float scale = 0;
  for (float v : want)
    scale = std::max(scale, std::fabs(v));
  // int8 activations (one digit per 32 inputs: a half step of max|x| / 127
  // per input, through two matvecs) below kGemmMinRows rows.
  const bool int8 = f && act == kernels::QActivations::Int8 && M < kGemmMinRows;
  const double tol = (int8 ? 2e-2 : f && M >= kGemmMinRows ? 5e-3 : 1e-4) * scale + 1e-5;
  int bad = 0;
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < K; ++c)
      if (!(std::fabs(got[r * yStride + c] - want[r * K + c]) <= tol) && bad++ < 5)
        ADD_FAILURE() << "M=" << M << " topK=" << topK << " shared=" << sharedI
                      << (f ? " packed" : " f32") << (accumulate ? " accumulate" : "")
                      << " " << kernels::qActivationsName(act)
                      << " y[" << r << "][" << c << "] = " << got[r * yStride + c]
                      << ", want " << want[r * K + c] << " ± " << tol;
  // Columns past the width untouched.
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = K; c < yStride; ++c)
      ASSERT_EQ(got[r * yStride + c], y0[r * yStride + c]);
}

// Decode (one row), a short prefill (matvecs per expert) and a long one
// (experts with >= 16 rows on the tensor cores); mixtral-style (top 2,
// renormalized), qwen2_moe-style (top 4 kept as is, gated shared expert).
TEST_F(GpuMoe, MoeAgainstTheReference) {
  const QuantFormat q4{4, 32, QuantGrid::Balanced}, q2{2, 64, QuantGrid::Affine};
  for (int64_t M : {1, 5, 100})
    for (const QuantFormat *f : {static_cast<const QuantFormat *>(nullptr), &q4, &q2}) {
      checkMoe(M, 2, true, 0, f, false);
      checkMoe(M, 4, false, 192, f, true); // 192: whole groups of 64 (q2)
    }
}

// A decode step (one row), and a launch of no more slots than experts
// (M·k <= E = 6), routes on the device: its MoE records no stream
// synchronization of its own (the test's run() makes one), where more
// slots route on the host (one more). The emulated driver counts them; the
// outputs are checkMoe's, against the reference, in every weight kind.
TEST_F(GpuMoe, DecodeRoutesOnTheDevice) {
  if (!emulated_)
    GTEST_SKIP() << "counts the emulated driver's synchronizations (runtime.cuda.emulated)";
  const QuantFormat q8{8, 64, QuantGrid::Balanced}, q2{2, 32, QuantGrid::Affine};
  struct Case {
    int64_t M, topK;
    bool onDevice;
  };
  for (const QuantFormat *f : {static_cast<const QuantFormat *>(nullptr), &q8, &q2})
    for (Case c : {Case{1, 3, true}, Case{2, 3, true}, Case{3, 3, false}, Case{5, 1, true},
                   Case{7, 1, false}}) {
      const int64_t before = fm_cuda_emu::counts().streamSyncs;
      checkMoe(c.M, c.topK, c.topK > 1, c.topK == 1 ? 64 : 0, f, c.topK == 1);
      EXPECT_EQ(fm_cuda_emu::counts().streamSyncs - before, c.onDevice ? 1 : 2)
          << "M=" << c.M << ", top " << c.topK << (f ? " packed" : " f32");
    }
}

// QActivations::Int8 (the session's --activations int8): the packed
// experts' x rounded to int8 per 32 inputs on the dp4a matvecs, routed on
// the device (one row) and on the host (5 rows; 100 take the tensor cores,
// as the Matmul kernel), the dense router and shared-expert gate in f32.
TEST_F(GpuMoe, Int8ActivationsAgainstTheReference) {
  const QuantFormat q4{4, 32, QuantGrid::Balanced}, q8{8, 64, QuantGrid::Affine};
  for (int64_t M : {1, 5, 100})
    for (const QuantFormat *f : {&q4, &q8}) {
      std::vector<float> int8, exact;
      checkMoe(M, 2, true, 0, f, false, kernels::QActivations::Int8, &int8);
      checkMoe(M, 4, false, 192, f, true, kernels::QActivations::Int8);
      // Below the tensor cores' rows the rounding shows: not the f32 path.
      checkMoe(M, 2, true, 0, f, false, kernels::QActivations::F32, &exact);
      if (M < kGemmMinRows)
        EXPECT_NE(int8, exact) << "M=" << M << ": int8 activations gave the f32 outputs";
    }
}

// y = 0.25 + x · Wᵀ through the HAL's Matmul for M rows of x (row r at
// x + r·xStride) and a packed weight of N x K normals, against
// qmatmulOn(Generic, F32) over the same packed weight, within `rel` of
// Σ|w·x| per output.
void GpuMoe::checkMatmul(QuantFormat f, int64_t M, kernels::QActivations act,
                         const std::vector<float> &x, int64_t xStride, double rel) {
  const int64_t K = 256, N = 100;
  const std::vector<float> wf = normals(size_t(N * K), 3, 0.05f);
  const size_t rowBytes = kernels::packedRowBytes(f, K);
  std::vector<uint8_t> packed(N * rowBytes);
  kernels::quantizeRows(wf.data(), N, K, f, packed.data());
  const int64_t yStride = N + 3;
  std::vector<float> want(static_cast<size_t>(M * N)), row(static_cast<size_t>(K));
  for (int64_t r = 0; r < M; ++r)
    kernels::qmatmulOn(kernels::KernelIsa::Generic, kernels::QActivations::F32,
                       x.data() + r * xStride, 1, K, packed.data(), f, N,
                       want.data() + r * N, false, nullptr);
  // mag: Σ|w·x|. deq: what rounding the affine grid's w = s·q + min in f32
  // may cost, in the reference (which dequantizes so) as in the kernels
  // (the matvec sums s·Σq·x and min·Σx apart, so its partial sums round at
  // their own size; the GEMM rounds w to f16): four ulps of |s·q| + |min|
  // per input. An input of 2e5 or 3e9 against a weight whose s·q and min
  // cancel makes that the larger term.
  std::vector<double> mag(size_t(M * N), 0.0), deq(size_t(M * N), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    const uint8_t *packedRow = packed.data() + n * rowBytes;
    kernels::dequantizeRow(packedRow, f, K, row.data());
    const uint8_t *mins = packedRow + K * f.bits / 8 + 2 * (K / f.group);
    for (int64_t r = 0; r < M; ++r)
      for (int64_t k = 0; k < K; ++k) {
        const double xv = std::fabs(double(x[r * xStride + k]));
        mag[r * N + n] += std::fabs(double(row[k])) * xv;
        if (f.grid == QuantGrid::Affine) {
          uint16_t h;
          std::memcpy(&h, mins + 2 * (k / f.group), 2);
          const double mn = kernels::halfToFloat(h);
          deq[r * N + n] += xv * (std::fabs(row[k] - mn) + std::fabs(mn)) * 0x1p-21;
        }
      }
  }
  auto wb = upload(packed.data(), packed.size());
  auto xb = upload(x.data(), x.size() * 4);
  const std::vector<float> y0(size_t(M * yStride), 0.25f);
  auto yb = upload(y0.data(), y0.size() * 4);
  MatmulDesc d;
  d.x = {xb.get(), 0, xStride, K};
  d.y = {yb.get(), 0, yStride, N};
  d.k = K;
  d.n = N;
  d.maxRows = M;
  d.activations = act;
  d.accumulate = true;
  WeightDesc wd;
  wd.buffer = wb.get();
  wd.bytes = packed.size();
  wd.kind = WeightKind::Quant;
  wd.format = f;
  wd.shape = {N, K};
  d.weights = {wd};
  run(device_->prepareMatmul(d), M);
  const std::vector<float> got = download(*yb, y0.size());
  int bad = 0;
  for (int64_t r = 0; r < M; ++r)
    for (int64_t n = 0; n < N; ++n) {
      const double ref = 0.25 + want[r * N + n];
      const double tol = rel * mag[r * N + n] + deq[r * N + n] + 1e-5;
      if (!(std::fabs(got[r * yStride + n] - ref) <= tol) && bad++ < 5)
        ADD_FAILURE() << "q" << f.bits << "g" << f.group << " M=" << M << " "
                      << kernels::qActivationsName(act) << " y[" << r << "][" << n
                      << "] = " << got[r * yStride + n] << ", want " << ref << " ± "
                      << tol;
    }
}

// Prefill matmuls of >= 16 rows on the tensor cores through the HAL's
// Matmul, against qmatmulOn(Generic, F32) over the same packed weight.
TEST_F(GpuMoe, MatmulTensorCoreRows) {
  const int64_t K = 256;
  for (const QuantFormat f : {QuantFormat{4, 64, QuantGrid::Balanced},
                              QuantFormat{2, 32, QuantGrid::Affine},
                              QuantFormat{8, 128, QuantGrid::Balanced}})
    for (int64_t M : {15, 16, 17, 64, 100})
      for (auto act : {kernels::QActivations::F32, kernels::QActivations::Int8}) {
        const int64_t xStride = K + 8;
        // f16 activations on the tensor cores; below 16 rows the matvec
        // (int8 activations: one digit per 32 inputs).
        const double rel = M >= kGemmMinRows ? 2e-3
                           : act == kernels::QActivations::Int8 ? 1e-2 : 1e-5;
        checkMatmul(f, M, act, normals(size_t(M * xStride), 4), xStride, rel);
      }
}

// Rows past f16's range (65504) on the tensor cores: every third row all
// ~1e6, every third one normal but for one input of 2e5 or 3e9, the rest
// normal (so one 64-row block mixes scaled and plain rows), against the f32
// CPU kernel: finite, and as close as ordinary rows.
TEST_F(GpuMoe, MatmulTensorCoreLargeRows) {
  const int64_t K = 256, xStride = K + 8;
  for (const QuantFormat f : {QuantFormat{4, 64, QuantGrid::Balanced},
                              QuantFormat{2, 32, QuantGrid::Affine}})
    for (int64_t M : {15, 17, 64, 100}) {
      std::vector<float> x = normals(size_t(M * xStride), 5);
      for (int64_t r = 0; r < M; ++r) {
        float *row = x.data() + r * xStride;
        if (r % 3 == 0)
          for (int64_t k = 0; k < K; ++k)
            row[k] *= 1e6f;
        else if (r % 3 == 1)
          row[(r * 37) % K] = r % 2 ? 2e5f : -3e9f;
      }
      checkMatmul(f, M, kernels::QActivations::F32, x, xStride,
                  M >= kGemmMinRows ? 2e-3 : 1e-5);
    }
}

} // namespace
} // namespace fm::hal::cuda
