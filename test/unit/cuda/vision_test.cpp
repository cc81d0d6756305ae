// The CUDA device's image-encoder kernels (CudaVision.cpp, kernels/vision.cu)
// against the CPU device's, from one description applied to both (the cases
// of test/unit/vulkan's vision tests): the matmul's bias / GELU epilogue
// (matvec and tensor-core rows), LayerNorm, the patch embedding, ViT
// attention (windows, global, relative positions, registers, pad rows), the
// 3x3 convolution and average pooling; the embedding's image rows (a VLM's
// prompt). On a GPU (runtime.cuda.gpu) and on
// the block emulator (runtime.cuda.emulated); skipped with neither.
#include "CudaVsCpu.h"
#include "VisionCases.h"
#include "fm/runtime.h"
#include "hal/cuda/CudaLinear.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

namespace fm::hal::cuda {
namespace {

class GpuVision : public CudaVsCpu {};
using gputest::VisionCases;

TEST_F(GpuVision, MatmulBiasAndGeluEpilogue) { VisionCases::matmulEpilogue(*this, kGemmMinRows + 4, 2e-3); }

TEST_F(GpuVision, LayerNormWithBias) { VisionCases::layerNorm(*this); }

TEST_F(GpuVision, LayerNormPastItsRowsIsRefused) {
  Blob blob;
  const size_t w = blob.add(randomFloats(8, 1), {8}, WeightKind::F32);
  importWeights(blob);
  LayerNormDesc d;
  d.x = d.y = rowsOf(gpu.buffer(std::vector<float>(3 * 8)), 8, 8);
  d.weight = d.bias = blob.desc(gpu, w);
  auto k = gpu.device->prepareLayerNorm(d);
  ASSERT_TRUE(k.isOk()) << k.message();
  auto q = gpu.device->createQueue({});
  ASSERT_TRUE(q.isOk()) << q.message();
  const Status s = (*k)->run(**q, Launch{4, 0, nullptr});
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("LayerNorm: a launch of 4 rows exceeds the 3"), std::string::npos)
      << s.message();
}

TEST_F(GpuVision, PatchEmbedWithRegistersAndPositions) { VisionCases::patchEmbed(*this); }

TEST_F(GpuVision, VitAttentionWindowsGlobalRelPosRegisters) { VisionCases::vitAttention(*this); }

TEST_F(GpuVision, OverTheKernelLimitsIsRefused) {
  VitAttentionDesc d;
  d.qkv = rowsOf(gpu.buffer(std::vector<float>(4 * 3 * 300)), 3 * 300, 3 * 300);
  d.out = rowsOf(gpu.buffer(std::vector<float>(4 * 300)), 300, 300);
  d.gridH = d.gridW = 2;
  d.heads = 1;
  d.headDim = 300;
  auto k = gpu.device->prepareVitAttention(d);
  ASSERT_FALSE(k.isOk());
  EXPECT_NE(k.message().find("head_dim 300 is outside the kernel's 1..256"), std::string::npos)
      << k.message();
  PatchEmbedDesc p;
  p.image = rowsOf(gpu.buffer(std::vector<float>(3 * 64 * 64)), 3 * 64 * 64, 3 * 64 * 64);
  p.out = rowsOf(gpu.buffer(std::vector<float>(4 * 8)), 8, 8);
  p.channels = 3;
  p.height = p.width = 64;
  p.patch = 32; // 3 x 32 x 32 = 3072 values per patch
  auto pk = gpu.device->preparePatchEmbed(p);
  ASSERT_FALSE(pk.isOk());
  EXPECT_NE(pk.message().find("3072 values per patch"), std::string::npos) << pk.message();
}

// The q8 convolution's 35 token rows run on the tensor cores (f16).
TEST_F(GpuVision, Conv3x3AndAveragePooling) { VisionCases::conv3x3AndPool(*this, 2e-3); }

TEST_F(GpuVision, EmbedSplicesImageRows) { VisionCases::embedSplicesImageRows(*this); }

// A whole image encoder compiled `--target cpu,cuda` (the artifact that
// FM_CUDA_TEST_VISION_FMB names: test/targets/cuda_vision.test): its image
// tokens on cuda against the CPU device's (f32 activations) for two random
// images, within `FM_CUDA_TEST_VISION_RTOL` (default 1e-5) of the largest
// |token value|.
TEST_F(GpuVision, EncoderOnCudaMatchesTheCpu) {
  const char *path = std::getenv("FM_CUDA_TEST_VISION_FMB");
  if (!path)
    GTEST_SKIP() << "FM_CUDA_TEST_VISION_FMB names no artifact (test/targets/cuda_vision.test)";
  const char *rtolText = std::getenv("FM_CUDA_TEST_VISION_RTOL");
  const double rtol = rtolText ? std::atof(rtolText) : 1e-5;
  std::vector<float> cudaTokens, cpuTokens;
  int64_t rows = 0, width = 0;
  for (const char *device : {"cuda", "cpu"}) {
    LoadOptions o;
    o.device = device;
    auto m = Model::load(path, o);
    ASSERT_TRUE(m.isOk()) << device << ": " << m.message();
    const ImageEncoderInfo *info = (*m)->imageEncoder();
    ASSERT_NE(info, nullptr) << path << " has no image encoder";
    SessionOptions so;
    so.activations = SessionOptions::Activations::F32;
    Session session(*m, so);
    std::vector<float> &out = std::string(device) == "cuda" ? cudaTokens : cpuTokens;
    for (uint32_t seed : {71u, 72u}) {
      const std::vector<float> image =
          randomFloats(size_t(info->channels * info->height * info->width), seed, 2.0f);
      auto t = session.encodeImage(image.data(), int64_t(image.size()));
      ASSERT_TRUE(t.isOk()) << device << ": " << t.message();
      out.insert(out.end(), t->data, t->data + t->rows * t->width);
      rows = t->rows;
      width = t->width;
    }
  }
  expectClose(cudaTokens, cpuTokens, rtol, "image tokens, cuda vs cpu");
  double maxRef = 0, maxErr = 0;
  for (size_t i = 0; i < cpuTokens.size(); ++i) {
    maxRef = std::max(maxRef, std::fabs(double(cpuTokens[i])));
    maxErr = std::max(maxErr, std::fabs(double(cudaTokens[i]) - cpuTokens[i]));
  }
  std::printf("image tokens: 2 images of %lld x %lld, max |cuda - cpu| = %.3g x max |cpu| "
              "(bound %.3g)\n",
              (long long)rows, (long long)width, maxErr / std::max(maxRef, 1e-30), rtol);
}

} // namespace
} // namespace fm::hal::cuda
