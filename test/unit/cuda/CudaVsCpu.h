// The CUDA device against the CPU device as a peer: one description
// prepared on both (DeviceSides.h), run, and the outputs compared. The
// fixture of vision_test.cpp and lora_test.cpp.
#pragma once

#include "CudaEmu.h"
#include "DeviceSides.h"
#include "hal/cpu/CpuDevice.h"
#include "hal/cuda/CudaDevice.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>

namespace fm::hal::cuda {

using gputest::Blob;
using gputest::expectClose;
using gputest::randomFloats;
using gputest::rowsOf;
using gputest::Side;
using kernels::QuantFormat;
using kernels::QuantGrid;

/// A CUDA device (a GPU, or the block emulator under runtime.cuda.emulated;
/// the test skips with neither) and the CPU device, with the test's weights
/// imported in both.
class CudaVsCpu : public ::testing::Test {
public: // to the shared cases (VisionCases.h) too

  static void SetUpTestSuite() { fm_cuda_emu::installIfAsked(); }
  void SetUp() override {
    auto d = CudaDevice::open(0);
    if (!d)
      GTEST_SKIP() << "skipped: no CUDA device (" << d.message() << ")";
    gpu.device = std::move(*d);
    cpu.device = std::make_unique<CpuDevice>();
  }

  void importWeights(const Blob &blob) {
    for (Side *s : {&gpu, &cpu}) {
      auto w = s->device->importWeights(blob.bytes.data(), blob.bytes.size());
      ASSERT_TRUE(w.isOk()) << w.message();
      s->weights = std::move(*w);
    }
  }
  /// Prepares `prepare(side)` on both devices and runs `launch` on each.
  void runBoth(const std::function<Expected<std::unique_ptr<Kernel>>(Side &)> &prepare,
               const Launch &launch) {
    for (Side *s : {&gpu, &cpu}) {
      auto k = prepare(*s);
      ASSERT_TRUE(k.isOk()) << (s == &gpu ? "cuda: " : "cpu: ") << k.message();
      QueueOptions qo;
      qo.threads = 1;
      qo.scratchBytes = (*k)->scratchBytes();
      auto q = s->device->createQueue(qo);
      ASSERT_TRUE(q.isOk()) << q.message();
      Status st = (*k)->run(**q, launch);
      ASSERT_TRUE(st.isOk()) << st.message();
      st = (*q)->flush();
      ASSERT_TRUE(st.isOk()) << st.message();
    }
  }
  void clearBuffers() {
    gpu.buffers.clear();
    cpu.buffers.clear();
  }

  Side gpu, cpu;
};

} // namespace fm::hal::cuda
