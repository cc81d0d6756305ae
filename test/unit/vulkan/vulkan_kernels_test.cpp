// Every Vulkan kernel on the device Vulkan finds (lavapipe in CI: ctest sets
// VK_ICD_FILENAMES to it) against the CPU device's kernels, from one
// description applied to both devices: matmul in every weight format of
// kernels/qformat.h, the embedding gather, attention over f32 and int8
// caches, MoE (routing, experts, shared expert), row copies and the
// AllReduce hook; the image encoders' kernels (patch embedding, LayerNorm,
// the matmul bias/GELU epilogue, ViT attention, 3x3 convolution, pooling,
// the VLM's image rows in the embedding). Odd shapes throughout; the Vulkan validation layer is on
// and any message fails the test. The CPU runs with f32 activations, as the
// GPU kernels do.
#include "DeviceSides.h"
#include "VisionCases.h"
#include "hal/cpu/CpuDevice.h"
#include "hal/vulkan/VulkanDevice.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

namespace fm::hal {
namespace {

using gputest::Blob;
using gputest::expectClose;
using gputest::randomFloats;
using gputest::rowsOf;
using gputest::Side;
using gputest::VisionCases;
using kernels::QuantFormat;
using kernels::QuantGrid;

vk::VulkanOptions testOptions() {
  vk::VulkanOptions o;
  o.validation = true;
  return o;
}

struct MatmulCase {
  WeightKind kind;
  QuantFormat format;
  // Owned: a pointer into a shared list of names dangled once a later call
  // grew the list (ASan: heap-use-after-free).
  std::string name;
};

std::vector<MatmulCase> matmulCases() {
  std::vector<MatmulCase> cases = {{WeightKind::F32, {8, 32, QuantGrid::Balanced}, "f32"},
                                   {WeightKind::F16, {8, 32, QuantGrid::Balanced}, "f16"}};
  for (int bits : {2, 4, 8})
    for (int group : {32, 64, 128})
      for (QuantGrid grid : {QuantGrid::Balanced, QuantGrid::Affine})
        cases.push_back({WeightKind::Quant, {bits, group, grid},
                         "q" + std::to_string(bits) + "g" + std::to_string(group) +
                             (grid == QuantGrid::Affine ? "a" : "b")});
  return cases;
}

// An adapter of loraCase: its matrices' kind, rank, scale, and the weights
// (of w0, w1) it adapts.
struct LoraSpec {
  bool q8;
  int64_t rank;
  float scale;
  bool onW0, onW1;
};

class VulkanKernels : public ::testing::Test {
protected:
  friend struct gputest::VisionCases; // the shared image-encoder cases
  /// Opens lavapipe (or whatever Vulkan finds) with validation; the CPU.
  void open(const vk::VulkanOptions &options = testOptions()) {
    auto v = vk::VulkanDevice::open(options);
    ASSERT_TRUE(v.isOk()) << v.message();
    vulkan_ = v->get();
    gpu.device = std::move(*v);
    cpu.device = std::make_unique<CpuDevice>();
  }
  void SetUp() override { open(); }
  void TearDown() override {
    if (vulkan_)
      EXPECT_EQ(vulkan_->validationMessages(), expectedMessages_)
          << "the validation layer reported problems (on stderr)";
    expectedMessages_ = 0;
  }

  void importWeights(const Blob &blob) {
    for (Side *s : {&gpu, &cpu}) {
      auto w = s->device->importWeights(blob.bytes.data(), blob.bytes.size());
      ASSERT_TRUE(w.isOk()) << w.message();
      s->weights = std::move(*w);
    }
  }

  /// Prepares `prepare(side)` on both devices, runs `launch` (after
  /// `before(side)`, which may reset buffers), and returns the queue of each.
  void runBoth(const std::function<Expected<std::unique_ptr<Kernel>>(Side &)> &prepare,
               const Launch &launch, int times = 1) {
    for (Side *s : {&gpu, &cpu}) {
      auto k = prepare(*s);
      ASSERT_TRUE(k.isOk()) << (s == &gpu ? "vulkan: " : "cpu: ") << k.message();
      QueueOptions qo;
      qo.threads = 1;
      qo.scratchBytes = (*k)->scratchBytes();
      auto q = s->device->createQueue(qo);
      ASSERT_TRUE(q.isOk()) << q.message();
      for (int t = 0; t < times; ++t) {
        Status st = (*k)->run(**q, launch);
        ASSERT_TRUE(st.isOk()) << st.message();
        st = (*q)->flush();
        ASSERT_TRUE(st.isOk()) << st.message();
      }
      if (s == &gpu) {
        lastDeviceMs_ = (*q)->deviceMs();
        lastDispatches_ = static_cast<vk::VulkanQueue &>(**q).dispatches();
        lastBarriers_ = static_cast<vk::VulkanQueue &>(**q).barriers();
      }
    }
  }

  /// y[:, 3 : 3 + n0 + n1] (+)= x · [w0; w1]ᵀ with x strided, y wider than
  /// the weights, M rows.
  void matmulCase(const MatmulCase &c, int64_t M, bool accumulate);
  /// A matmul of two stacked weights in format c with LoRA adapters
  /// (LoraSpec, below), against the CPU; returns the Vulkan dispatches.
  uint64_t loraCase(const MatmulCase &c, int64_t M, const std::vector<LoraSpec> &specs,
                    const std::string &what);
  /// Gathers 7 rows (repeats included) of a 61-row table.
  void embedCase(WeightKind kind, QuantFormat f, const std::string &what);
  /// Reopens the Vulkan device with `options`.
  void reopen(const vk::VulkanOptions &options) {
    TearDown();
    gpu = Side();
    cpu = Side();
    open(options);
  }
  void clearBuffers() {
    gpu.buffers.clear();
    cpu.buffers.clear();
  }

  vk::VulkanDevice *vulkan_ = nullptr;
  int expectedMessages_ = 0; // validation messages a test provoked itself
  Side gpu, cpu;
  double lastDeviceMs_ = -1.0;
  uint64_t lastDispatches_ = 0; // the last runBoth's Vulkan dispatches
  uint64_t lastBarriers_ = 0;   // and its barriers (the queue starts clean)
  int64_t loraYPad_ = 9;        // loraCase's y row stride past its n0 + n1
};

TEST_F(VulkanKernels, ValidationLayerReportsMisuse) {
  // A zero-sized buffer is invalid (VUID-VkBufferCreateInfo-size-00912): the
  // layer must report it, or the silence of the other tests proves nothing.
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, nullptr, 0, 0,
                        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, VK_SHARING_MODE_EXCLUSIVE,
                        0, nullptr};
  VkBuffer b = VK_NULL_HANDLE;
  const int before = vulkan_->validationMessages();
  VkResult r = vkCreateBuffer(vulkan_->context().device(), &bi, nullptr, &b);
  EXPECT_GT(vulkan_->validationMessages(), before);
  if (r == VK_SUCCESS)
    vkDestroyBuffer(vulkan_->context().device(), b, nullptr);
  expectedMessages_ = vulkan_->validationMessages();
}

// --- matmul ----------------------------------------------------------------

void VulkanKernels::matmulCase(const MatmulCase &c, int64_t M, bool accumulate) {
  const int64_t K = c.kind == WeightKind::Quant ? 3 * c.format.group : 77;
  const int64_t n0 = 37, n1 = 6, xStride = K + 5, yStride = n0 + n1 + 9;
  Blob blob;
  const size_t w0 = blob.add(randomFloats(n0 * K, 1), {n0, K}, c.kind, c.format);
  const size_t w1 = blob.add(randomFloats(n1 * K, 2), {n1, K}, c.kind, c.format);
  importWeights(blob);
  const std::vector<float> x = randomFloats(M * xStride, 3);
  const std::vector<float> y0 = randomFloats(M * yStride, 4);
  Buffer *ys[2];
  int side = 0;
  runBoth(
      [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
        MatmulDesc d;
        d.x = rowsOf(s.buffer(x), xStride, K);
        Buffer *y = s.buffer(y0);
        ys[side++] = y;
        d.y = rowsOf(y, yStride, n0 + n1, 3);
        d.k = K;
        d.n = n0 + n1;
        d.accumulate = accumulate;
        d.weights = {blob.desc(s, w0), blob.desc(s, w1)};
        d.maxRows = M;
        d.activations = kernels::QActivations::F32;
        return s.device->prepareMatmul(d);
      },
      Launch{M, 0, nullptr});
  if (HasFatalFailure())
    return;
  expectClose(gpu.read(ys[0]), cpu.read(ys[1]), 2e-5,
              c.name + " M=" + std::to_string(M) +
                  (accumulate ? " accumulate" : ""));
}

void VulkanKernels::embedCase(WeightKind kind, QuantFormat f, const std::string &what) {
  const int64_t vocab = 61, width = kind == WeightKind::Quant ? 2 * f.group : 45;
  Blob blob;
  const size_t table = blob.add(randomFloats(vocab * width, 9), {vocab, width}, kind, f);
  importWeights(blob);
  const std::vector<int32_t> tokens = {0, 60, 17, 17, 3, 59, 31};
  const int64_t rows = int64_t(tokens.size()), stride = width + 3;
  Buffer *outs[2];
  int side = 0;
  runBoth(
      [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
        EmbedDesc d;
        d.table = blob.desc(s, table);
        Buffer *out = s.buffer(std::vector<float>(rows * stride, -7.0f));
        outs[side++] = out;
        d.out = rowsOf(out, stride, width);
        return s.device->prepareEmbed(d);
      },
      Launch{rows, 0, tokens.data()});
  if (HasFatalFailure())
    return;
  expectClose(gpu.read(outs[0]), cpu.read(outs[1]), 1e-7, what);
}

TEST_F(VulkanKernels, MatmulEveryWeightFormat) {
  for (const MatmulCase &c : matmulCases())
    for (int64_t M : {1, 13})
      for (bool acc : {false, true}) {
        if (M == 13 && acc && c.kind == WeightKind::Quant && c.format.group != 64)
          continue; // accumulate is format-independent: one group suffices
        clearBuffers();
        matmulCase(c, M, acc);
        if (HasFatalFailure())
          return;
      }
}

TEST_F(VulkanKernels, MatmulSplitsBindingsPastTheRangeLimit) {
  // 4 KiB bindings: the weights split by rows (n0 = 37 rows of 308 bytes:
  // 3 parts), the activations by rows (13 rows of 328 bytes: 2 parts).
  vk::VulkanOptions small = testOptions();
  small.maxRange = 4096;
  reopen(small);
  for (const MatmulCase &c : {matmulCases()[0], matmulCases()[5]}) {
    clearBuffers();
    matmulCase(c, 13, false);
  }
}

TEST_F(VulkanKernels, MatmulThroughStaging) {
  // Unmapped device memory, as on a discrete GPU: every upload and download
  // is a copy through a staging buffer.
  vk::VulkanOptions staged = testOptions();
  staged.forceStaging = true;
  reopen(staged);
  matmulCase(matmulCases()[3], 5, true);
}

// --- LoRA side path ------------------------------------------------------------

// y[:, 3 : 3 + 96] = x · [w0; w1]ᵀ (base format c; K = 96, or 3 groups) + the adapters of
// `specs`, each in a buffer of its own (as a session's adapter is; its A's
// back to back, so the f16 ones on both weights are one down product, the
// q8 ones, rows of 102 bytes, are not). Returns the Vulkan queue's
// dispatches.
uint64_t VulkanKernels::loraCase(const MatmulCase &c, int64_t M,
                                 const std::vector<LoraSpec> &specs,
                                 const std::string &what) {
  const int64_t K = c.kind == WeightKind::Quant ? 3 * c.format.group : 96;
  const int64_t n0 = 64, n1 = 32, xStride = K + 5, yStride = n0 + n1 + loraYPad_;
  const QuantFormat f8{8, 32, QuantGrid::Balanced};
  Blob base;
  const size_t w0 = base.add(randomFloats(n0 * K, 21), {n0, K}, c.kind, c.format);
  const size_t w1 = base.add(randomFloats(n1 * K, 22), {n1, K}, c.kind, c.format);
  importWeights(base);
  // Per adapter: its blob, and per weight its (A, Bᵀ) entries.
  struct Adapter {
    Blob blob;
    size_t a[2], bt[2];
    std::unique_ptr<Buffer> buffer[2]; // gpu, cpu
  };
  std::vector<Adapter> adapters(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const LoraSpec &sp = specs[i];
    const WeightKind kind = sp.q8 ? WeightKind::Quant : WeightKind::F16;
    const uint32_t seed = 100 + 10 * uint32_t(i);
    Adapter &ad = adapters[i];
    for (int w = 0; w < 2; ++w)
      ad.a[w] = ad.blob.add(randomFloats(sp.rank * K, seed + w, 0.3f), {sp.rank, K}, kind, f8);
    for (int w = 0; w < 2; ++w) {
      const int64_t rows = w == 0 ? n0 : n1;
      ad.bt[w] = ad.blob.add(randomFloats(sp.rank * rows, seed + 2 + w, 0.3f), {sp.rank, rows},
                             kind, f8);
    }
    for (int side = 0; side < 2; ++side) {
      Side &s = side == 0 ? gpu : cpu;
      auto b = s.device->importWeights(ad.blob.bytes.data(), ad.blob.bytes.size());
      EXPECT_TRUE(b.isOk()) << b.message();
      if (!b)
        return 0;
      ad.buffer[side] = std::move(*b);
    }
  }
  const std::vector<float> x = randomFloats(M * xStride, 29);
  const std::vector<float> y0 = randomFloats(M * yStride, 30);
  Buffer *ys[2];
  int side = 0;
  runBoth(
      [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
        const int si = &s == &gpu ? 0 : 1;
        MatmulDesc d;
        d.x = rowsOf(s.buffer(x), xStride, K);
        Buffer *y = s.buffer(y0);
        ys[side++] = y;
        d.y = rowsOf(y, yStride, n0 + n1, 3);
        d.k = K;
        d.n = n0 + n1;
        d.weights = {base.desc(s, w0), base.desc(s, w1)};
        d.maxRows = M;
        d.activations = kernels::QActivations::F32;
        // As the executor lists them: per weight, its terms in adapter order.
        for (int w = 0; w < 2; ++w)
          for (size_t i = 0; i < specs.size(); ++i) {
            if (!(w == 0 ? specs[i].onW0 : specs[i].onW1))
              continue;
            LoraTerm t;
            t.a = adapters[i].blob.desc(s, adapters[i].a[w]);
            t.a.buffer = adapters[i].buffer[si].get();
            t.bt = adapters[i].blob.desc(s, adapters[i].bt[w]);
            t.bt.buffer = adapters[i].buffer[si].get();
            t.rank = specs[i].rank;
            t.col0 = w == 0 ? 0 : n0;
            t.rows = w == 0 ? n0 : n1;
            t.scale = specs[i].scale;
            d.lora.push_back(t);
          }
        return s.device->prepareMatmul(d);
      },
      Launch{M, 0, nullptr});
  if (HasFatalFailure())
    return 0;
  expectClose(gpu.read(ys[0]), cpu.read(ys[1]), 2e-5,
              c.name + " " + what + " M=" + std::to_string(M));
  return lastDispatches_;
}

TEST_F(VulkanKernels, MatmulWithLoraAdaptersEveryWeightFormat) {
  // Two stacked adapters of different kinds, ranks and scales: adapter 1 on
  // both weights, adapter 2 on w0 only (its terms add to the columns
  // adapter 1's do). Each run is its downs (f16 on both weights: 1, q8: 2;
  // adapter 2: 1), then ONE fused dispatch (the three terms fit it).
  for (const MatmulCase &c : matmulCases())
    for (int64_t M : {1, 13})
      for (bool q8 : {false, true}) {
        if (c.kind == WeightKind::Quant && c.format.group == 128 && M == 13)
          continue; // the LoRA stage is the base format's: fewer prefill cases
        clearBuffers();
        const uint64_t n = loraCase(c, M, {{q8, 4, 0.75f, true, true}, {!q8, 3, -1.25f, true, false}},
                                    q8 ? "q8+f16 LoRA" : "f16+q8 LoRA");
        if (HasFatalFailure())
          return;
        EXPECT_EQ(n, (q8 ? 2u : 1u) + 1u + 1u) << c.name << " M=" << M;
        EXPECT_EQ(lastBarriers_, 1u) << c.name << " M=" << M; // t, then the fused dispatch
      }
}

TEST_F(VulkanKernels, MatmulWithMoreLoraTermsThanOneDispatchTakes) {
  // Four adapters on w0 (5 terms: more than kLoraTerms = 3 on one column
  // range): w0's columns get 3 in the base dispatch and the fourth in a
  // K = 0 dispatch that adds to y; w1's term in a dispatch of its own.
  // Downs: 4 (every adapter is its own buffer; adapter 1's f16 A's are one).
  const MatmulCase c = matmulCases()[5];
  for (int64_t M : {1, 13}) {
    clearBuffers();
    const uint64_t n = loraCase(c, M,
                                {{false, 4, 0.75f, true, true},
                                 {true, 3, -1.25f, true, false},
                                 {false, 2, 0.5f, true, false},
                                 {true, 5, 2.0f, true, false}},
                                "4 adapters");
    if (HasFatalFailure())
      return;
    EXPECT_EQ(n, 4u + 3u) << "M=" << M;
  }
}

TEST_F(VulkanKernels, MatmulWithLoraSplitsBindingsPastTheRangeLimit) {
  // 4 KiB bindings: the base block [w0; w1] (96 rows; q2 rows of 60 bytes,
  // f16 ones of 192) splits into parts that end inside adapter columns.
  vk::VulkanOptions small = testOptions();
  small.maxRange = 4096;
  reopen(small);
  // Then with y's rows padded to 1220 bytes: its 5 rows take two bindings
  // while x's fit one (the fused dispatches bind y per part of its rows).
  for (int64_t yPad : {9, 209})
    for (const MatmulCase &c : {matmulCases()[5], matmulCases()[1]}) {
      clearBuffers();
      loraYPad_ = yPad;
      loraCase(c, 5, {{false, 4, 0.75f, true, true}, {true, 3, -1.25f, true, false}},
               "split, y padded by " + std::to_string(yPad));
      loraYPad_ = 9;
      if (HasFatalFailure())
        return;
    }
}

// A device that allows 4 storage buffers per stage (all Vulkan guarantees;
// the fused variant binds 7): the LoRA matmul runs unfused.
vk::VulkanOptions fourStorageBuffers() {
  vk::VulkanOptions o = testOptions();
  o.maxStorageBuffers = 4;
  return o;
}

TEST_F(VulkanKernels, MatmulWithLoraUnfusedOnFourStorageBuffersEveryWeightFormat) {
  // The adapters of MatmulWithLoraAdaptersEveryWeightFormat: the same
  // downs, then the base matmul (1 dispatch) and one up product per term
  // (3) instead of one fused dispatch.
  reopen(fourStorageBuffers());
  for (const MatmulCase &c : matmulCases())
    for (int64_t M : {1, 13})
      for (bool q8 : {false, true}) {
        if (c.kind == WeightKind::Quant && c.format.group == 128 && M == 13)
          continue;
        clearBuffers();
        const uint64_t n = loraCase(c, M, {{q8, 4, 0.75f, true, true}, {!q8, 3, -1.25f, true, false}},
                                    q8 ? "unfused q8+f16 LoRA" : "unfused f16+q8 LoRA");
        if (HasFatalFailure())
          return;
        EXPECT_EQ(n, (q8 ? 2u : 1u) + 1u + 1u + 3u) << c.name << " M=" << M;
        // One before the plain base matmul (its own first dispatch); the ups
        // in order w0·A1, w0·A2, w1·A1: one before the first (the base's y)
        // and before w0·A2 (it adds to w0·A1's block); w1·A1's columns are
        // its own, so it runs without one.
        EXPECT_EQ(lastBarriers_, 3u) << c.name << " M=" << M;
      }
}

TEST_F(VulkanKernels, MatmulWithLoraUnfusedManyTermsAndSplitBindings) {
  // Four adapters on w0 (no kLoraTerms limit unfused: 4 downs, 1 base, 5
  // ups); then 4 KiB bindings, where the base splits by weight rows.
  reopen(fourStorageBuffers());
  const MatmulCase c = matmulCases()[5];
  const uint64_t n = loraCase(c, 13,
                              {{false, 4, 0.75f, true, true},
                               {true, 3, -1.25f, true, false},
                               {false, 2, 0.5f, true, false},
                               {true, 5, 2.0f, true, false}},
                              "unfused 4 adapters");
  if (HasFatalFailure())
    return;
  EXPECT_EQ(n, 4u + 1u + 5u);
  EXPECT_EQ(lastBarriers_, 5u); // the base's, one before each of w0's four ups; w1's none
  vk::VulkanOptions small = fourStorageBuffers();
  small.maxRange = 4096;
  reopen(small);
  // Then y's rows padded to 1220 bytes: x's 5 rows fit one binding, y's
  // take two (3 + 2 rows), so each of the 3 terms' ups runs once per
  // binding of y (as a long prefill's gate/up output outgrows a binding
  // before its input does).
  for (int64_t yPad : {9, 209})
    for (const MatmulCase &sc : {matmulCases()[5], matmulCases()[1]}) {
      clearBuffers();
      loraYPad_ = yPad;
      const uint64_t n = loraCase(
          sc, 5, {{false, 4, 0.75f, true, true}, {true, 3, -1.25f, true, false}},
          "unfused split, y padded by " + std::to_string(yPad));
      loraYPad_ = 9;
      if (HasFatalFailure())
        return;
      const uint64_t ups = yPad == 209 ? 6u : 3u, downs = 2u;
      EXPECT_GE(n, downs + 1u + ups) << sc.name << " yPad=" << yPad;
    }
}

TEST_F(VulkanKernels, KernelsOverTheStorageBufferLimitAreRefused) {
  // The MoE experts' and the patch embedding's kernels bind 6 storage
  // buffers: on a device that allows 4 they are refused, naming the kernel
  // and the limit, before Vulkan sees the layout.
  reopen(fourStorageBuffers());
  const int64_t E = 2, K = 32, I = 16;
  Blob blob;
  const size_t router = blob.add(randomFloats(E * K, 1), {E, K}, WeightKind::F32);
  std::vector<size_t> gate, up, down;
  for (int64_t e = 0; e < E; ++e) {
    gate.push_back(blob.add(randomFloats(I * K, 2), {I, K}, WeightKind::F32));
    up.push_back(blob.add(randomFloats(I * K, 3), {I, K}, WeightKind::F32));
    down.push_back(blob.add(randomFloats(K * I, 4), {K, I}, WeightKind::F32));
  }
  const int64_t ch = 3, H = 8, W = 8, p = 4, dim = 16;
  const size_t pw = blob.add(randomFloats(dim * ch * p * p, 5), {dim, ch * p * p}, WeightKind::F32);
  const size_t pb = blob.add(randomFloats(dim, 6), {dim}, WeightKind::F32);
  importWeights(blob);
  MoeDesc m;
  m.x = rowsOf(gpu.buffer(std::vector<float>(K)), K, K);
  m.y = rowsOf(gpu.buffer(std::vector<float>(K)), K, K);
  m.router = blob.desc(gpu, router);
  for (int64_t e = 0; e < E; ++e) {
    m.gate.push_back(blob.desc(gpu, gate[e]));
    m.up.push_back(blob.desc(gpu, up[e]));
    m.down.push_back(blob.desc(gpu, down[e]));
  }
  m.topK = 1;
  m.maxRows = 1;
  m.activations = kernels::QActivations::F32;
  auto moe = gpu.device->prepareMoe(m);
  ASSERT_FALSE(moe.isOk());
  EXPECT_NE(moe.message().find("kernel moe_up_f32 binds 6 storage buffers; this device allows 4"),
            std::string::npos)
      << moe.message();
  PatchEmbedDesc pe;
  pe.image = rowsOf(gpu.buffer(randomFloats(ch * H * W, 7)), ch * H * W, ch * H * W);
  pe.out = rowsOf(gpu.buffer(std::vector<float>(4 * dim)), dim, dim);
  pe.channels = ch;
  pe.height = H;
  pe.width = W;
  pe.patch = p;
  pe.weight = blob.desc(gpu, pw);
  pe.bias = blob.desc(gpu, pb);
  auto patch = gpu.device->preparePatchEmbed(pe);
  ASSERT_FALSE(patch.isOk());
  EXPECT_NE(patch.message().find("kernel patch_embed binds 6 storage buffers; this device allows 4"),
            std::string::npos)
      << patch.message();
  // A device that allows 6 runs them (the limit is the device's, not a
  // fixed one).
  vk::VulkanOptions six = testOptions();
  six.maxStorageBuffers = 6;
  reopen(six);
  importWeights(blob);
  m.x.buffer = gpu.buffer(std::vector<float>(K));
  m.y.buffer = gpu.buffer(std::vector<float>(K));
  m.router = blob.desc(gpu, router);
  for (int64_t e = 0; e < E; ++e) {
    m.gate[e] = blob.desc(gpu, gate[e]);
    m.up[e] = blob.desc(gpu, up[e]);
    m.down[e] = blob.desc(gpu, down[e]);
  }
  auto ok = gpu.device->prepareMoe(m);
  EXPECT_TRUE(ok.isOk()) << ok.message();
}

TEST_F(VulkanKernels, LoraScaleZeroAndDetachingGiveTheBaseBitForBit) {
  // The fused output stage adds nothing at scale 0 (y bit for bit the base
  // kernel's), and the base kernel after an adapter's run (a detached
  // session) is the base bit for bit; unfused (4 storage buffers) as well.
  for (bool fused : {true, false}) {
    if (!fused)
      reopen(fourStorageBuffers());
    const QuantFormat q4{4, 32, QuantGrid::Balanced}, f8{8, 32, QuantGrid::Balanced};
    const int64_t K = 64, N = 40, M = 3;
    Blob blob;
    const size_t w = blob.add(randomFloats(N * K, 41), {N, K}, WeightKind::Quant, q4);
    const size_t a = blob.add(randomFloats(4 * K, 42, 0.3f), {4, K}, WeightKind::Quant, f8);
    const size_t bt = blob.add(randomFloats(4 * N, 43, 0.3f), {4, N}, WeightKind::F16);
    importWeights(blob);
    const std::vector<float> x = randomFloats(M * K, 44);
    auto run = [&](const std::vector<float> &scales) {
      MatmulDesc d;
      d.x = rowsOf(gpu.buffer(x), K, K);
      Buffer *y = gpu.buffer(std::vector<float>(M * N, 0.0f));
      d.y = rowsOf(y, N, N);
      d.k = K;
      d.n = N;
      d.weights = {blob.desc(gpu, w)};
      d.maxRows = M;
      for (float s : scales) {
        LoraTerm t;
        t.a = blob.desc(gpu, a);
        t.bt = blob.desc(gpu, bt);
        t.rank = 4;
        t.rows = N;
        t.scale = s;
        d.lora.push_back(t);
      }
      auto k = gpu.device->prepareMatmul(d);
      EXPECT_TRUE(k.isOk()) << k.message();
      QueueOptions qo;
      qo.scratchBytes = (*k)->scratchBytes();
      auto q = gpu.device->createQueue(qo);
      EXPECT_TRUE(q.isOk()) << q.message();
      EXPECT_TRUE((*k)->run(**q, Launch{M, 0, nullptr}).isOk());
      EXPECT_TRUE((*q)->flush().isOk());
      return gpu.read(y);
    };
    const std::vector<float> base = run({});
    const char *how = fused ? "fused" : "unfused";
    EXPECT_EQ(run({0.0f}), base) << how << ": scale 0";
    EXPECT_EQ(run({0.0f, 0.0f}), base) << how << ": two adapters at scale 0";
    EXPECT_NE(run({1.0f}), base) << how << ": the adapter changes y";
    EXPECT_EQ(run({}), base) << how << ": detached";
  }
}

TEST_F(VulkanKernels, LoraOfAnotherFormatIsRefused) {
  // Adapters store f16 or 8-bit balanced matrices; anything else is named.
  Blob blob;
  const size_t w = blob.add(randomFloats(8 * 32, 31), {8, 32}, WeightKind::F32);
  const size_t a = blob.add(randomFloats(2 * 32, 32), {2, 32}, WeightKind::F32);
  const size_t b = blob.add(randomFloats(2 * 8, 33), {2, 8}, WeightKind::F16);
  importWeights(blob);
  MatmulDesc d;
  d.x = rowsOf(gpu.buffer(std::vector<float>(32)), 32, 32);
  d.y = rowsOf(gpu.buffer(std::vector<float>(8)), 8, 8);
  d.k = 32;
  d.n = 8;
  d.weights = {blob.desc(gpu, w)};
  LoraTerm t;
  t.a = blob.desc(gpu, a);
  t.bt = blob.desc(gpu, b);
  t.rank = 2;
  t.rows = 8;
  d.lora = {t};
  auto k = gpu.device->prepareMatmul(d);
  ASSERT_FALSE(k.isOk());
  EXPECT_NE(k.message().find("LoRA A 'w1' is neither f16 nor 8-bit"), std::string::npos)
      << k.message();
}

// --- embed -----------------------------------------------------------------

TEST_F(VulkanKernels, EmbedEveryWeightFormat) {
  for (const MatmulCase &c : matmulCases()) {
    clearBuffers();
    embedCase(c.kind, c.format, c.name);
    if (HasFatalFailure())
      return;
  }
}

TEST_F(VulkanKernels, EmbedThroughWindowsPastTheRangeLimit) {
  // A 61 x 45 f32 table is 10980 bytes: 2 KiB bindings read it through
  // windows (every row, 180 bytes, lies inside one).
  vk::VulkanOptions small = testOptions();
  small.maxRange = 2048;
  reopen(small);
  embedCase(WeightKind::F32, {8, 32, QuantGrid::Balanced}, "f32 windows");
  clearBuffers();
  embedCase(WeightKind::Quant, {4, 64, QuantGrid::Affine}, "q4 windows");
}

// --- attention ---------------------------------------------------------------

struct AttnCase {
  int64_t H, KVH, D, window, pos, rows;
  bool int8;
};

TEST_F(VulkanKernels, AttentionOverTheCache) {
  const AttnCase cases[] = {
      {6, 2, 48, 0, 0, 1, false},  {6, 2, 48, 0, 9, 1, false},
      {6, 2, 48, 0, 3, 5, false},  {4, 4, 130, 0, 70, 3, false},
      {6, 3, 48, 5, 11, 4, false}, {8, 2, 64, 0, 66, 2, true},
      {6, 2, 48, 7, 20, 3, true},  {2, 1, 96, 0, 0, 4, true},
  };
  Blob blob;
  blob.add({0.0f}, {1}, WeightKind::F32); // the devices need a weights buffer
  importWeights(blob);
  for (const AttnCase &c : cases) {
    const int64_t capacity = c.pos + c.rows + 3, kvWidth = c.KVH * c.D;
    const int64_t qStride = c.H * c.D + 4, width = c.H * c.D;
    const std::vector<float> q = randomFloats(c.rows * qStride, 11);
    std::vector<float> kf = randomFloats(capacity * kvWidth, 12),
                       vf = randomFloats(capacity * kvWidth, 13);
    std::vector<uint8_t> k8(capacity * kvWidth), v8(capacity * kvWidth);
    std::mt19937 rng(14);
    for (size_t i = 0; i < k8.size(); ++i) {
      k8[i] = uint8_t(int8_t(int(rng() % 255) - 127));
      v8[i] = uint8_t(int8_t(int(rng() % 255) - 127));
    }
    Buffer *outs[2];
    int side = 0;
    runBoth(
        [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
          AttentionDesc d;
          d.q = rowsOf(s.buffer(q), qStride, width);
          Buffer *out = s.buffer(std::vector<float>(c.rows * width, 0.0f));
          outs[side++] = out;
          d.out = rowsOf(out, width, width);
          // The cache slot: K then V, each [capacity][kvWidth], after a
          // 48-byte lead (an offset that is not binding-aligned).
          const uint64_t elem = c.int8 ? 1 : 4, part = capacity * kvWidth * elem;
          std::vector<uint8_t> cache(48 + 2 * part);
          std::memcpy(cache.data() + 48, c.int8 ? (void *)k8.data() : (void *)kf.data(), part);
          std::memcpy(cache.data() + 48 + part, c.int8 ? (void *)v8.data() : (void *)vf.data(),
                      part);
          Buffer *kv = s.bytes(cache);
          d.k = CacheRows{kv, 48, capacity, kvWidth, c.int8};
          d.v = CacheRows{kv, 48 + part, capacity, kvWidth, c.int8};
          d.heads = c.H;
          d.kvHeads = c.KVH;
          d.headDim = c.D;
          d.window = c.window;
          d.scale = 1.0f / std::sqrt(float(c.D));
          d.kScale = c.int8 ? 0.011f : 1.0f;
          d.vScale = c.int8 ? 0.013f : 1.0f;
          d.maxRows = c.rows;
          return s.device->prepareAttention(d);
        },
        Launch{c.rows, c.pos, nullptr});
    if (HasFatalFailure())
      return;
    expectClose(gpu.read(outs[0]), cpu.read(outs[1]), 2e-5,
                "attention H=" + std::to_string(c.H) + " KVH=" + std::to_string(c.KVH) +
                    " D=" + std::to_string(c.D) + " window=" + std::to_string(c.window) +
                    " pos=" + std::to_string(c.pos) + " rows=" + std::to_string(c.rows) +
                    (c.int8 ? " int8" : ""));
  }
}

// --- MoE ---------------------------------------------------------------------

struct MoeCase {
  WeightKind kind;
  QuantFormat format;
  int64_t rows, topK;
  bool shared, normTopk, accumulate;
};

TEST_F(VulkanKernels, MoeRoutingExpertsAndSharedExpert) {
  const MoeCase cases[] = {
      {WeightKind::F32, {8, 32, QuantGrid::Balanced}, 1, 2, false, true, false},
      {WeightKind::F32, {8, 32, QuantGrid::Balanced}, 11, 2, true, true, true},
      {WeightKind::F16, {8, 32, QuantGrid::Balanced}, 7, 3, true, false, false},
      {WeightKind::Quant, {4, 32, QuantGrid::Affine}, 9, 2, true, true, false},
      {WeightKind::Quant, {2, 64, QuantGrid::Balanced}, 1, 1, false, true, true},
  };
  for (const MoeCase &c : cases) {
    clearBuffers();
    const int64_t E = 5;
    const int64_t K = c.kind == WeightKind::Quant ? 2 * c.format.group : 40;
    const int64_t I = c.kind == WeightKind::Quant ? c.format.group : 24;
    const int64_t Is = c.kind == WeightKind::Quant ? 2 * c.format.group : 16;
    Blob blob;
    // The CPU's f32/f16 MoE takes every weight in one dtype; its packed
    // path takes any mix (here an f32 router and expert gate).
    const WeightKind small = c.kind == WeightKind::Quant ? WeightKind::F32 : c.kind;
    const size_t router = blob.add(randomFloats(E * K, 20, 2.0f), {E, K}, small);
    std::vector<size_t> gate, up, down;
    for (int64_t e = 0; e < E; ++e) {
      gate.push_back(blob.add(randomFloats(I * K, 30 + e), {I, K}, c.kind, c.format));
      up.push_back(blob.add(randomFloats(I * K, 40 + e), {I, K}, c.kind, c.format));
      down.push_back(blob.add(randomFloats(K * I, 50 + e), {K, I}, c.kind, c.format));
    }
    const size_t sg = blob.add(randomFloats(Is * K, 60), {Is, K}, c.kind, c.format);
    const size_t su = blob.add(randomFloats(Is * K, 61), {Is, K}, c.kind, c.format);
    const size_t sd = blob.add(randomFloats(K * Is, 62), {K, Is}, c.kind, c.format);
    const size_t seg = blob.add(randomFloats(K, 63), {1, K}, small);
    importWeights(blob);
    const int64_t xStride = K + 2, yStride = K + 6;
    const std::vector<float> x = randomFloats(c.rows * xStride, 64);
    const std::vector<float> y0 = randomFloats(c.rows * yStride, 65);
    Buffer *ys[2];
    int side = 0;
    runBoth(
        [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
          MoeDesc d;
          d.x = rowsOf(s.buffer(x), xStride, K);
          Buffer *y = s.buffer(y0);
          ys[side++] = y;
          d.y = rowsOf(y, yStride, K);
          d.router = blob.desc(s, router);
          for (int64_t e = 0; e < E; ++e) {
            d.gate.push_back(blob.desc(s, gate[e]));
            d.up.push_back(blob.desc(s, up[e]));
            d.down.push_back(blob.desc(s, down[e]));
          }
          d.hasShared = c.shared;
          if (c.shared) {
            d.sharedGate = blob.desc(s, sg);
            d.sharedUp = blob.desc(s, su);
            d.sharedDown = blob.desc(s, sd);
            d.sharedExpertGate = blob.desc(s, seg);
          }
          d.topK = c.topK;
          d.normTopk = c.normTopk;
          d.accumulate = c.accumulate;
          d.maxRows = c.rows;
          d.activations = kernels::QActivations::F32;
          return s.device->prepareMoe(d);
        },
        Launch{c.rows, 0, nullptr});
    if (HasFatalFailure())
      return;
    expectClose(gpu.read(ys[0]), cpu.read(ys[1]), 2e-5,
                std::string("moe rows=") + std::to_string(c.rows) +
                    " topK=" + std::to_string(c.topK) + (c.shared ? " shared" : ""));
  }
}

// --- copies and the AllReduce hook -------------------------------------------

TEST_F(VulkanKernels, CopyLastRow) {
  Blob blob;
  blob.add({0.0f}, {1}, WeightKind::F32);
  importWeights(blob);
  const int64_t width = 70, stride = 75;
  const std::vector<float> src = randomFloats(6 * stride, 70);
  Buffer *dsts[2];
  int side = 0;
  runBoth(
      [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
        CopyRowDesc d;
        d.src = rowsOf(s.buffer(src), stride, width);
        Buffer *dst = s.buffer(std::vector<float>(width + 2, 5.0f));
        dsts[side++] = dst;
        d.dst = rowsOf(dst, width, width, 1);
        return s.device->prepareCopyRow(d);
      },
      Launch{4, 0, nullptr});
  expectClose(gpu.read(dsts[0]), cpu.read(dsts[1]), 0.0, "copy row");
}

/// A peer rank that computed exactly what this one did: sums double.
class TwinRanks final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  Status allReduceSum(float *data, int64_t count) override {
    ++calls;
    for (int64_t i = 0; i < count; ++i)
      data[i] *= 2.0f;
    return Status::ok();
  }
  Status broadcast(int32_t *, int64_t, int) override { return Status::ok(); }
  int calls = 0;
};

TEST_F(VulkanKernels, AllReduceSumsPartialsAndStagesThroughTheHost) {
  Blob blob;
  blob.add({0.0f}, {1}, WeightKind::F32);
  importWeights(blob);
  const int64_t width = 33, stride = 40, rows = 3;
  const std::vector<float> a = randomFloats(rows * stride, 80), b = randomFloats(rows * stride, 81),
                           c = randomFloats(rows * stride, 82);
  for (bool inPlace : {false, true})
    for (bool twin : {false, true}) {
      TwinRanks ranks[2];
      CollectiveStats stats[2];
      Buffer *outs[2];
      int side = 0;
      runBoth(
          [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
            AllReduceDesc d;
            Buffer *out = s.buffer(c);
            outs[side] = out;
            d.out = rowsOf(out, stride, width);
            d.inputs = {rowsOf(s.buffer(a), stride, width), rowsOf(s.buffer(b), stride, width)};
            if (inPlace)
              d.inputs.push_back(d.out);
            d.scale = 0.25f;
            d.comm = twin ? &ranks[side] : nullptr;
            d.stats = &stats[side];
            d.maxRows = rows;
            ++side;
            return s.device->prepareAllReduce(d);
          },
          Launch{rows, 0, nullptr});
      if (HasFatalFailure())
        return;
      expectClose(gpu.read(outs[0]), cpu.read(outs[1]), 1e-7,
                  std::string("allreduce") + (inPlace ? " in place" : "") +
                      (twin ? " two ranks" : ""));
      EXPECT_EQ(stats[0].allReduces, 1);
      EXPECT_EQ(ranks[0].calls, twin ? 1 : 0);
    }
}

TEST_F(VulkanKernels, TimestampsMeasureTheDeviceTime) {
  Blob blob;
  const size_t w = blob.add(randomFloats(64 * 256, 90), {64, 256}, WeightKind::F32);
  importWeights(blob);
  const std::vector<float> x = randomFloats(256, 91);
  runBoth(
      [&](Side &s) -> Expected<std::unique_ptr<Kernel>> {
        MatmulDesc d;
        d.x = rowsOf(s.buffer(x), 256, 256);
        d.y = rowsOf(s.buffer(std::vector<float>(64)), 64, 64);
        d.k = 256;
        d.n = 64;
        d.weights = {blob.desc(s, w)};
        return s.device->prepareMatmul(d);
      },
      Launch{1, 0, nullptr}, 3);
  if (vulkan_->context().timestamps())
    EXPECT_GT(lastDeviceMs_, 0.0);
  else
    EXPECT_LT(lastDeviceMs_, 0.0);
}

// --- image encoders (VulkanVision.cpp) ------------------------------------------

TEST_F(VulkanKernels, MatmulBiasAndGeluEpilogue) { VisionCases::matmulEpilogue(*this, 20, 2e-5); }

TEST_F(VulkanKernels, LayerNormWithBias) { VisionCases::layerNorm(*this); }

TEST_F(VulkanKernels, PatchEmbedWithRegistersAndPositions) { VisionCases::patchEmbed(*this); }


TEST_F(VulkanKernels, VitAttentionWindowsGlobalRelPosRegisters) { VisionCases::vitAttention(*this); }

TEST_F(VulkanKernels, VitAttentionOverTheKernelLimitsIsRefused) {
  Blob blob;
  blob.add(randomFloats(16, 1), {16}, WeightKind::F32);
  importWeights(blob);
  VitAttentionDesc d;
  d.qkv = rowsOf(gpu.buffer(std::vector<float>(4 * 3 * 300)), 3 * 300, 3 * 300);
  d.out = rowsOf(gpu.buffer(std::vector<float>(4 * 300)), 300, 300);
  d.gridH = d.gridW = 2;
  d.heads = 1;
  d.headDim = 300;
  auto k = gpu.device->prepareVitAttention(d);
  ASSERT_FALSE(k.isOk());
  EXPECT_NE(k.message().find("head_dim 300 is over the kernel's 256"), std::string::npos)
      << k.message();
}

TEST_F(VulkanKernels, Conv3x3AndAveragePooling) { VisionCases::conv3x3AndPool(*this, 2e-5); }

TEST_F(VulkanKernels, EmbedSplicesImageRows) { VisionCases::embedSplicesImageRows(*this); }

} // namespace
} // namespace fm::hal
