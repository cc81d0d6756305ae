// The Vulkan device: device memory, the artifact's SPIR-V (VulkanExecutable),
// and the hand-written GLSL kernels (shaders/), recorded into one command
// buffer per program run (VulkanQueue) and submitted at Queue::flush().
//
// It runs on any Vulkan 1.2 device with 8/16-bit storage and int8 shaders;
// CI runs it on Mesa's lavapipe (a CPU implementation), which the registry
// marks as software so that the default device choice never takes it.
#pragma once

#include "hal/Device.h"
#include "hal/vulkan/VulkanContext.h"
#include "hal/vulkan/VulkanPipelines.h"

#include <memory>
#include <string>
#include <vector>

namespace fm::hal::vk {

/// A VkBuffer in its own memory: device-local (mapped when the host can see
/// it, as on lavapipe and unified-memory GPUs), or host-visible for
/// MemorySpace::Host. Only Host buffers expose host().
class VulkanBuffer final : public Buffer {
public:
  static Expected<std::unique_ptr<VulkanBuffer>>
  create(std::shared_ptr<VulkanContext> ctx, uint64_t bytes, MemorySpace space);
  ~VulkanBuffer() override;

  VkBuffer handle() const { return buffer_; }
  /// The mapping of the whole buffer, or null (not host-visible, or
  /// VulkanOptions::forceStaging).
  uint8_t *mapped() const { return mapped_; }
  /// Bytes allocated (size() rounded up to 16; Vulkan has no empty buffers).
  uint64_t allocatedSize() const { return allocated_; }

private:
  VulkanBuffer(uint64_t size, MemorySpace space, uint8_t *host)
      : Buffer(size, space, host) {}
  std::shared_ptr<VulkanContext> ctx_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint8_t *mapped_ = nullptr;
  uint64_t allocated_ = 0;
};

/// One session's queue: a command buffer that the kernels record into (it
/// begins at the first kernel after a flush), a fence, timestamps around
/// every submission, and the session's device scratch (QueueOptions).
class VulkanQueue final : public Queue {
public:
  static Expected<std::unique_ptr<VulkanQueue>>
  create(std::shared_ptr<VulkanContext> ctx, const QueueOptions &options);
  ~VulkanQueue() override;

  int threads() const override { return 1; }
  void runConcurrently(int64_t n, const std::function<void(int64_t)> &fn) override;
  Status flush() override;
  double deviceMs() const override { return ctx_->timestamps() ? deviceMs_ : -1.0; }

  /// The device scratch of QueueOptions::scratchBytes (null when 0).
  VulkanBuffer *scratch() const { return scratch_.get(); }
  /// Dispatches and barriers recorded since the queue was made (the tests
  /// count what a kernel costs).
  uint64_t dispatches() const { return dispatches_; }
  uint64_t barriers() const { return barriers_; }

  /// Records a dispatch of `p` with `set` and `push` (p.pushBytes bytes);
  /// after a barrier on everything recorded before, unless `independent`
  /// (the previous dispatch wrote nothing this one touches).
  Status dispatch(const Pipeline &p, VkDescriptorSet set, const void *push,
                  uint32_t x, uint32_t y, uint32_t z, bool independent = false);
  /// The same with the workgroup counts read from `args` at `offset` (three
  /// uint32, written by an earlier dispatch).
  Status dispatchIndirect(const Pipeline &p, VkDescriptorSet set, const void *push,
                          VkBuffer args, uint64_t offset, bool independent = false);
  /// Records a write of `bytes` host bytes (a multiple of 4, copied now)
  /// at `offset` of `buffer`, ordered after every dispatch recorded before
  /// and before every one after (a VLM's image rows into its embedding).
  Status update(const VulkanBuffer &buffer, uint64_t offset, const void *data,
                uint64_t bytes);

private:
  explicit VulkanQueue(std::shared_ptr<VulkanContext> ctx) : ctx_(std::move(ctx)) {}
  Status begin();
  void barrier();

  std::shared_ptr<VulkanContext> ctx_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  bool recording_ = false, dirty_ = false;
  double deviceMs_ = 0.0;
  uint64_t dispatches_ = 0, barriers_ = 0;
  std::unique_ptr<VulkanBuffer> scratch_;
};

class VulkanDevice final : public Device {
public:
  static Expected<std::unique_ptr<VulkanDevice>> open(const VulkanOptions &options);
  ~VulkanDevice() override;

  const std::string &name() const override { return name_; }
  const std::string &target() const override { return name_; }
  std::string description() const override;

  Expected<std::unique_ptr<Buffer>> allocate(uint64_t bytes,
                                             MemorySpace space) override;
  Status upload(Buffer &buffer, uint64_t offset, const void *data,
                uint64_t bytes) override;
  Status download(const Buffer &buffer, uint64_t offset, void *data,
                  uint64_t bytes) override;
  Expected<std::unique_ptr<Buffer>> importWeights(const uint8_t *data,
                                                  uint64_t bytes) override;
  bool readsLayout(const std::string &layout) const override { return layout.empty(); }
  Expected<std::unique_ptr<Executable>>
  loadExecutable(const artifact::Executable &executable,
                 const std::string &artifactName) override;
  Expected<std::unique_ptr<Queue>> createQueue(const QueueOptions &options) override;

  Expected<std::unique_ptr<Kernel>> prepareEmbed(const EmbedDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareMatmul(const MatmulDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareAttention(const AttentionDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareMoe(const MoeDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareDispatch(const DispatchDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareCopyRow(const CopyRowDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareAllReduce(const AllReduceDesc &) override;
  // The image encoders' kernels (VulkanVision.cpp).
  Expected<std::unique_ptr<Kernel>> preparePatchEmbed(const PatchEmbedDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareLayerNorm(const LayerNormDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareVitAttention(const VitAttentionDesc &) override;
  Expected<std::unique_ptr<Kernel>> prepareConv3x3(const Conv3x3Desc &) override;
  Expected<std::unique_ptr<Kernel>> prepareAvgPool(const AvgPoolDesc &) override;

  VulkanContext &context() const { return *ctx_; }
  const std::shared_ptr<VulkanContext> &sharedContext() const { return ctx_; }
  PipelineLibrary &pipelines() { return *pipelines_; }
  /// Validation messages so far (VulkanOptions::validation).
  int validationMessages() const { return ctx_->validationMessages(); }

private:
  VulkanDevice() = default;
  /// Copies through a host-visible staging buffer (unmapped memory).
  Status staged(VulkanBuffer &buffer, uint64_t offset, void *data, uint64_t bytes,
                bool toDevice);

  std::string name_ = "vulkan";
  std::shared_ptr<VulkanContext> ctx_;
  std::unique_ptr<PipelineLibrary> pipelines_;
};

} // namespace fm::hal::vk
