// The Vulkan instance, physical device choice, logical device and compute
// queue that one Vulkan device (VulkanDevice.h) and everything it creates
// share; memory-type choice and one-off transfer submissions.
#pragma once

#include "fm/status.h"

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace fm::hal::vk {

/// How a Vulkan device is opened. The environment sets the defaults
/// (fromEnvironment); tests lower the limits to reach the split paths.
struct VulkanOptions {
  /// FM_VULKAN_DEVICE: index of the physical device; -1 picks the best
  /// (discrete, integrated, virtual, then CPU implementations).
  int deviceIndex = -1;
  /// FM_VULKAN_VALIDATION=1: the Khronos validation layer is enabled (an
  /// error when it is not installed), and each of its messages is printed
  /// on stderr ("fm: vulkan validation: ...") and counted.
  bool validation = false;
  /// > 0: the most bytes one storage-buffer binding covers, if below the
  /// device's maxStorageBufferRange (tests of the sub-range splitting).
  uint64_t maxRange = 0;
  /// > 0: the most storage buffers one kernel may bind, if below the
  /// device's maxPerStageDescriptorStorageBuffers (Vulkan guarantees 4;
  /// lavapipe reports far more). FM_VULKAN_MAX_STORAGE_BUFFERS sets it, so
  /// that tests on lavapipe reach the paths of a device with few (the
  /// unfused LoRA matmul, the refusal of kernels that bind more).
  uint32_t maxStorageBuffers = 0;
  /// Host-visible device memory is not mapped: every upload and download
  /// goes through a staging buffer, as on a discrete GPU (tests).
  bool forceStaging = false;

  static VulkanOptions fromEnvironment();
};

/// What probing found.
struct VulkanProbe {
  bool found = false; // a device that can run fm's kernels
  bool cpu = false;   // a CPU implementation (lavapipe, SwiftShader)
  std::string description; // the device, or why there is none
};

/// Finds the device VulkanContext::create would open, without creating it.
VulkanProbe probeVulkan(const VulkanOptions &options);

/// "VK_ERROR_OUT_OF_DEVICE_MEMORY".
std::string resultName(VkResult result);

/// "vkCreateBuffer failed: VK_ERROR_OUT_OF_DEVICE_MEMORY", or ok.
Status check(VkResult result, const char *what);

class VulkanContext {
public:
  static Expected<std::shared_ptr<VulkanContext>>
  create(const VulkanOptions &options);
  ~VulkanContext();
  VulkanContext(const VulkanContext &) = delete;
  VulkanContext &operator=(const VulkanContext &) = delete;

  VkDevice device() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  const VkPhysicalDeviceProperties &properties() const { return props_; }
  const VulkanOptions &options() const { return options_; }
  uint32_t queueFamily() const { return family_; }
  VkPipelineCache pipelineCache() const { return pipelineCache_; }
  /// "llvmpipe (LLVM 15.0.6, 256 bits), Vulkan 1.3.230, cpu".
  const std::string &description() const { return description_; }
  bool isCpu() const { return props_.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU; }

  /// The most bytes one storage-buffer binding covers, and the alignment of
  /// a binding's offset.
  uint64_t maxRange() const { return maxRange_; }
  uint64_t offsetAlignment() const { return offsetAlign_; }
  /// The most storage buffers one kernel binds (maxPerStageDescriptorStorageBuffers,
  /// or VulkanOptions::maxStorageBuffers below it).
  uint32_t storageBuffers() const { return storageBuffers_; }
  /// Timestamps on the compute queue, and nanoseconds per tick.
  bool timestamps() const { return timestamps_; }
  double timestampPeriod() const { return props_.limits.timestampPeriod; }

  /// Validation messages so far (0 without validation).
  int validationMessages() const { return messages_.load(); }

  /// A memory type among `typeBits` with device-local memory (preferring
  /// one the host can map), or (host) host-visible coherent memory.
  Expected<uint32_t> memoryType(uint32_t typeBits, bool host) const;
  bool isHostVisible(uint32_t type) const;

  /// Submits `cmd` (recorded, ended) on the compute queue and, when
  /// `fence` is set, signals it. The one VkQueue is shared by every queue
  /// of the device: submissions are serialized.
  Status submit(VkCommandBuffer cmd, VkFence fence);

  /// Records `record` into a one-off command buffer, submits it and waits
  /// (uploads and downloads through staging). Serialized.
  Status runOnce(const std::function<void(VkCommandBuffer)> &record);

private:
  VulkanContext() = default;
  Status init(const VulkanOptions &options);
  static VkBool32 VKAPI_PTR onMessage(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                      VkDebugUtilsMessageTypeFlagsEXT,
                                      const VkDebugUtilsMessengerCallbackDataEXT *,
                                      void *);

  VulkanOptions options_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  VkPhysicalDeviceProperties props_{};
  VkPhysicalDeviceMemoryProperties memory_{};
  uint64_t maxRange_ = 0, offsetAlign_ = 0;
  uint32_t storageBuffers_ = 0;
  bool timestamps_ = false;
  std::string description_;
  VkPipelineCache pipelineCache_ = VK_NULL_HANDLE;
  std::atomic<int> messages_{0};

  std::mutex submitMutex_;
  std::mutex onceMutex_; // the one-off command buffer below
  VkCommandPool oncePool_ = VK_NULL_HANDLE;
  VkCommandBuffer onceCmd_ = VK_NULL_HANDLE;
  VkFence onceFence_ = VK_NULL_HANDLE;
};

} // namespace fm::hal::vk
