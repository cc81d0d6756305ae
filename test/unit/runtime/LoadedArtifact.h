// An artifact loaded on the CPU device by hand, for tests that drive the
// executor directly (the public API does the same in fm::Model::load).
#pragma once

#include "Executor.h"
#include "fm/artifact.h"
#include "hal/cpu/CpuDevice.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace fm::test {

struct LoadedArtifact {
  std::unique_ptr<ArtifactFile> artifact;
  std::unique_ptr<hal::Device> device;
  std::unique_ptr<hal::Buffer> weights;
  std::unique_ptr<hal::Executable> executable;
  rt::LoadedModel model;

  /// Verifies `file` and, with `withExecutable`, loads its CPU executable.
  /// Returns false (after a test failure) when that fails.
  bool load(const std::vector<uint8_t> &file, const std::string &name,
            bool withExecutable) {
    auto a = ArtifactFile::fromBuffer(file.data(), file.size(), name, {});
    EXPECT_TRUE(a.isOk()) << a.message();
    if (!a)
      return false;
    artifact = std::move(*a);
    device = std::make_unique<hal::CpuDevice>();
    auto w = device->importWeights(artifact->data(), artifact->dataSize());
    if (!w)
      return false;
    weights = std::move(*w);
    if (withExecutable) {
      const artifact::Executable *exe = artifact->executable("cpu");
      EXPECT_TRUE(exe != nullptr) << name << " has no cpu executable";
      if (!exe)
        return false;
      auto loaded = device->loadExecutable(*exe, name);
      EXPECT_TRUE(loaded.isOk()) << loaded.message();
      if (!loaded)
        return false;
      executable = std::move(*loaded);
    }
    model.artifact = artifact.get();
    model.device = device.get();
    model.weights = weights.get();
    model.executable = executable.get();
    return true;
  }

  Expected<std::unique_ptr<rt::Executor>>
  executor(int threads, kernels::QActivations act = kernels::QActivations::Int8x2,
           Communicator *comm = nullptr) const {
    rt::ExecutorOptions o;
    o.threads = threads;
    o.activations = act;
    o.comm = comm;
    return rt::Executor::create(model, o);
  }
};

} // namespace fm::test
