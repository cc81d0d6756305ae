// Compute pipelines (the hand-written kernels by name and specialization,
// cached per device; the functions of a loaded executable), and the
// descriptor sets a prepared kernel binds its buffers with.
#pragma once

#include "fm/status.h"
#include "hal/vulkan/VulkanContext.h"

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fm::hal::vk {

class VulkanBuffer;

/// A compute pipeline over `bindings` storage buffers (set 0, bindings 0 ..
/// n - 1) and `pushBytes` of push constants.
struct Pipeline {
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindings = 0, pushBytes = 0;
};

/// Creates a pipeline for entry `entry` of `module`; spec[i] is the value
/// of specialization constant i (32-bit).
Expected<Pipeline> createPipeline(VulkanContext &ctx, VkShaderModule module,
                                  const char *entry, uint32_t bindings,
                                  uint32_t pushBytes,
                                  const std::vector<uint32_t> &spec);
void destroyPipeline(VulkanContext &ctx, Pipeline &p);

/// An error naming `kernel` when it binds more storage buffers than one
/// shader stage of the device may (VulkanContext::storageBuffers): such a
/// layout is invalid, so it is refused before Vulkan sees it.
Status checkStorageBuffers(const VulkanContext &ctx, uint32_t bindings,
                           const std::string &kernel);

Expected<VkShaderModule> createShaderModule(VulkanContext &ctx,
                                            const uint32_t *words, size_t count);

/// The hand-written kernels (VulkanShaders.h): each pipeline is created on
/// first use and kept for the device's life (in the context's pipeline
/// cache).
class PipelineLibrary {
public:
  explicit PipelineLibrary(std::shared_ptr<VulkanContext> ctx);
  ~PipelineLibrary();
  PipelineLibrary(const PipelineLibrary &) = delete;
  PipelineLibrary &operator=(const PipelineLibrary &) = delete;

  /// Kernel `shader` ("matmul_q") with its specialization constants.
  Expected<const Pipeline *> get(const std::string &shader, uint32_t bindings,
                                 uint32_t pushBytes,
                                 const std::vector<uint32_t> &spec = {});

private:
  std::shared_ptr<VulkanContext> ctx_;
  std::mutex mutex_;
  std::map<std::string, VkShaderModule> modules_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
};

/// A storage-buffer binding: `range` bytes of `buffer` from `offset` (a
/// multiple of the device's offset alignment); the data a kernel means
/// starts `elem` elements into it.
struct BoundRange {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t offset = 0, range = 0;
  uint32_t elem = 0;
};

/// The binding of bytes [offset, offset + bytes) of `buffer`, read as
/// elements of `elemSize` bytes; an error (naming `what`) when it spans more
/// than the device's maxStorageBufferRange.
Expected<BoundRange> bindRange(const VulkanContext &ctx, const VulkanBuffer &buffer,
                               uint64_t offset, uint64_t bytes, uint32_t elemSize,
                               const std::string &what);

/// The descriptor sets of one prepared kernel, from pools of its own (freed
/// with it). Sets are written once, when the kernel is prepared (or when it
/// first runs on a queue whose scratch it binds).
class DescriptorSets {
public:
  explicit DescriptorSets(std::shared_ptr<VulkanContext> ctx) : ctx_(std::move(ctx)) {}
  ~DescriptorSets();
  DescriptorSets(const DescriptorSets &) = delete;
  DescriptorSets &operator=(const DescriptorSets &) = delete;

  /// A set for `p` with `ranges[i]` at binding i.
  Expected<VkDescriptorSet> make(const Pipeline &p,
                                 const std::vector<BoundRange> &ranges);
  /// Rewrites the bindings of `set`.
  void write(VkDescriptorSet set, const std::vector<BoundRange> &ranges);

private:
  std::shared_ptr<VulkanContext> ctx_;
  std::vector<VkDescriptorPool> pools_;
  uint32_t left_ = 0; // sets left in the last pool
};

} // namespace fm::hal::vk
