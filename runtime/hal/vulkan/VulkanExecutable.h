// Loads an artifact's "spirv" executable: one shader module, a compute
// pipeline per function, laid out by the function's launch metadata.
#pragma once

#include "fm/fmb_generated.h"
#include "fm/status.h"
#include "hal/Device.h"
#include "hal/vulkan/VulkanPipelines.h"

#include <memory>
#include <string>
#include <vector>

namespace fm::hal::vk {

class VulkanExecutable final : public Executable {
public:
  /// One function: its pipeline (bindings 0 .. n - 1 of set 0, in Dispatch
  /// argument order) and what each 4-byte push constant holds.
  struct Function {
    std::string name;
    Pipeline pipeline;
    enum class Push : uint8_t { Rows, Pos, Offset };
    /// Per push-constant word: what it holds, and for Offset, of which
    /// binding ("offset.<i>": the element offset of argument i's row 0 in
    /// its binding).
    std::vector<std::pair<Push, uint32_t>> push;
  };

  static Expected<std::unique_ptr<VulkanExecutable>>
  load(std::shared_ptr<VulkanContext> ctx, const fm::artifact::Executable &exe,
       const std::string &artifactName);
  ~VulkanExecutable() override;

  size_t numFunctions() const override { return functions_.size(); }
  const Function &function(size_t i) const { return functions_[i]; }

private:
  explicit VulkanExecutable(std::shared_ptr<VulkanContext> ctx) : ctx_(std::move(ctx)) {}
  std::shared_ptr<VulkanContext> ctx_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  std::vector<Function> functions_;
};

} // namespace fm::hal::vk
