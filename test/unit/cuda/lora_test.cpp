// The CUDA device's LoRA side path (CudaKernels.cpp's MatmulKernel,
// kernels/lora.cu) against the CPU device's (CpuLora.cpp), from one
// MatmulDesc with adapter terms (the cases of test/unit/vulkan's LoRA
// tests): two stacked adapters of different kinds, ranks and scales on a
// matmul of two weights, in f32, f16 and packed base formats; one row
// (decode), 13 (matvecs) and 20 (the tensor cores, f16 operands). With the
// bias and GELU epilogue after it; and adapter matrices in a format
// adapters never store refused by name.
#include "CudaVsCpu.h"
#include "hal/cuda/CudaLinear.h"

#include <string>

namespace fm::hal::cuda {
namespace {

class GpuLora : public CudaVsCpu {
protected:
  /// An adapter of loraCase: its matrices' kind, rank, scale, and the
  /// weights (of w0, w1) it adapts.
  struct Spec {
    bool q8;
    int64_t rank;
    float scale;
    bool onW0, onW1;
  };
  /// y[:, 3 : 3 + n0 + n1] += x · [w0; w1]ᵀ + the adapters' terms (then
  /// act(· + bias) with `epilogue`), M rows, against the CPU device.
  void loraCase(WeightKind kind, QuantFormat format, int64_t M, const std::vector<Spec> &specs,
                bool epilogue, const std::string &what);
};

void GpuLora::loraCase(WeightKind kind, QuantFormat format, int64_t M,
                       const std::vector<Spec> &specs, bool epilogue, const std::string &what) {
  clearBuffers();
  const int64_t K = kind == WeightKind::Quant ? 3 * format.group : 96;
  const int64_t n0 = 64, n1 = 32, xStride = K + 5, yStride = n0 + n1 + 7;
  const QuantFormat f8{8, 32, QuantGrid::Balanced};
  Blob base;
  const size_t w0 = base.add(randomFloats(n0 * K, 21), {n0, K}, kind, format);
  const size_t w1 = base.add(randomFloats(n1 * K, 22), {n1, K}, kind, format);
  const size_t bias = base.add(randomFloats(n0 + n1, 23), {n0 + n1}, WeightKind::F32);
  importWeights(base);
  struct Adapter {
    Blob blob;
    size_t a[2], bt[2];
    std::unique_ptr<Buffer> buffer[2]; // cuda, cpu
  };
  std::vector<Adapter> adapters(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const Spec &sp = specs[i];
    const WeightKind mk = sp.q8 ? WeightKind::Quant : WeightKind::F16;
    const uint32_t seed = 100 + 10 * uint32_t(i);
    Adapter &ad = adapters[i];
    for (int w = 0; w < 2; ++w)
      ad.a[w] = ad.blob.add(randomFloats(sp.rank * K, seed + w, 0.3f), {sp.rank, K}, mk, f8);
    for (int w = 0; w < 2; ++w) {
      const int64_t rows = w == 0 ? n0 : n1;
      ad.bt[w] = ad.blob.add(randomFloats(sp.rank * rows, seed + 2 + w, 0.3f), {sp.rank, rows},
                             mk, f8);
    }
    for (int side = 0; side < 2; ++side) {
      Side &s = side == 0 ? gpu : cpu;
      auto b = s.device->importWeights(ad.blob.bytes.data(), ad.blob.bytes.size());
      ASSERT_TRUE(b.isOk()) << b.message();
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
        d.accumulate = !epilogue;
        d.weights = {base.desc(s, w0), base.desc(s, w1)};
        if (epilogue) {
          d.bias = base.desc(s, bias);
          d.activation = Activation::Gelu;
        }
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
    return;
  // From kGemmMinRows rows the packed base and the q8 A's run on the
  // tensor cores, whose operands are f16.
  const bool f16Operands = M >= kGemmMinRows;
  expectClose(gpu.read(ys[0]), cpu.read(ys[1]), f16Operands ? 3e-3 : 2e-5,
              what + " M=" + std::to_string(M) + (epilogue ? " bias+gelu" : ""));
}

TEST_F(GpuLora, TwoStackedAdaptersOnEveryBaseKind) {
  struct Case {
    WeightKind kind;
    QuantFormat format;
    const char *name;
  };
  const Case cases[] = {{WeightKind::F32, {8, 32, QuantGrid::Balanced}, "f32"},
                        {WeightKind::F16, {8, 32, QuantGrid::Balanced}, "f16"},
                        {WeightKind::Quant, {4, 32, QuantGrid::Balanced}, "q4g32b"},
                        {WeightKind::Quant, {2, 64, QuantGrid::Affine}, "q2g64a"},
                        {WeightKind::Quant, {8, 128, QuantGrid::Balanced}, "q8g128b"}};
  // Adapter 1 on both weights, adapter 2 on w0 only (its term adds to the
  // columns adapter 1's does).
  for (const Case &c : cases)
    for (int64_t M : {int64_t(1), int64_t(13), kGemmMinRows + 4})
      for (bool q8 : {false, true}) {
        loraCase(c.kind, c.format, M, {{q8, 4, 0.75f, true, true}, {!q8, 3, -1.25f, true, false}},
                 false, std::string(c.name) + (q8 ? " q8+f16 LoRA" : " f16+q8 LoRA"));
        if (HasFatalFailure())
          return;
      }
}

TEST_F(GpuLora, BeforeTheBiasAndActivation) {
  for (int64_t M : {1, 13}) {
    loraCase(WeightKind::F16, {8, 32, QuantGrid::Balanced}, M, {{true, 8, 0.5f, true, true}},
             true, "f16 base, q8 LoRA");
    if (HasFatalFailure())
      return;
  }
}

TEST_F(GpuLora, AdapterMatricesInOtherFormatsAreRefused) {
  const int64_t K = 32, N = 8;
  Blob blob;
  const size_t w = blob.add(randomFloats(N * K, 1), {N, K}, WeightKind::F32);
  const size_t q4 = blob.add(randomFloats(4 * K, 2), {4, K}, WeightKind::Quant,
                             {4, 32, QuantGrid::Balanced});
  importWeights(blob);
  for (size_t a : {w, q4}) {
    MatmulDesc d;
    d.x = rowsOf(gpu.buffer(std::vector<float>(K)), K, K);
    d.y = rowsOf(gpu.buffer(std::vector<float>(N)), N, N);
    d.k = K;
    d.n = N;
    d.weights = {blob.desc(gpu, w)};
    LoraTerm t;
    t.a = blob.desc(gpu, a);
    t.bt = blob.desc(gpu, w);
    t.rank = 4;
    t.rows = N;
    d.lora = {t};
    auto k = gpu.device->prepareMatmul(d);
    ASSERT_FALSE(k.isOk());
    EXPECT_NE(k.message().find("cuda: LoRA A 'w" + std::to_string(a) +
                               "' is neither f16 nor 8-bit balanced"),
              std::string::npos)
        << k.message();
  }
}

} // namespace
} // namespace fm::hal::cuda
