// Loads an artifact's "msl" executable (targets/metal/MetalTarget.cpp): one
// MSL translation unit per function, each ending with a NUL byte, compiled
// with newLibraryWithSource into a pipeline per function, laid out by the
// function's launch metadata (the same as the Vulkan executable's).
#pragma once

#include "fm/fmb_generated.h"
#include "fm/status.h"
#include "hal/Device.h"
#include "hal/metal/MetalPipelines.h"

#include <memory>
#include <string>
#include <vector>

namespace fm::hal::mtl {

class MetalExecutable final : public Executable {
public:
  /// One function: its pipeline (argument i at [[buffer(i)]], in Dispatch
  /// argument order; the push constants after them) and what each 4-byte
  /// push constant holds (as VulkanExecutable::Function).
  struct Function {
    std::string name;
    Pipeline pipeline;
    enum class Push : uint8_t { Rows, Pos, Offset };
    std::vector<std::pair<Push, uint32_t>> push;
  };

  static Expected<std::unique_ptr<MetalExecutable>>
  load(const MetalContext &ctx, const fm::artifact::Executable &exe,
       const std::string &artifactName);

  size_t numFunctions() const override { return functions_.size(); }
  const Function &function(size_t i) const { return functions_[i]; }

private:
  MetalExecutable() = default;
  std::vector<Function> functions_;
};

} // namespace fm::hal::mtl
