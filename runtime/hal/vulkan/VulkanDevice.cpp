// The Vulkan device (VulkanDevice.h): buffers, transfers, executables and
// queues; its kernels are in VulkanKernels.cpp and VulkanMoe.cpp.
#include "hal/vulkan/VulkanDevice.h"

#include "hal/vulkan/VulkanExecutable.h"

#include <algorithm>
#include <cstring>

namespace fm::hal::vk {

Expected<std::unique_ptr<VulkanBuffer>>
VulkanBuffer::create(std::shared_ptr<VulkanContext> ctx, uint64_t bytes,
                     MemorySpace space) {
  const uint64_t allocated = std::max<uint64_t>(16, (bytes + 15) & ~uint64_t(15));
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = allocated;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
             VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkDevice dev = ctx->device();
  VkBuffer buffer = VK_NULL_HANDLE;
  const std::string what = std::to_string(bytes) + "-byte buffer";
  if (Status s = check(vkCreateBuffer(dev, &bi, nullptr, &buffer), "vkCreateBuffer");
      !s)
    return Status::error(s.message() + " (" + what + ")");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, buffer, &req);
  auto type = ctx->memoryType(req.memoryTypeBits, space == MemorySpace::Host);
  if (!type) {
    vkDestroyBuffer(dev, buffer, nullptr);
    return type.status();
  }
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = *type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  if (Status s = check(vkAllocateMemory(dev, &ai, nullptr, &memory), "vkAllocateMemory");
      !s) {
    vkDestroyBuffer(dev, buffer, nullptr);
    return Status::error(s.message() + " (" + what + ")");
  }
  vkBindBufferMemory(dev, buffer, memory, 0);
  uint8_t *mapped = nullptr;
  const bool mappable = ctx->isHostVisible(*type) &&
                        (space == MemorySpace::Host || !ctx->options().forceStaging);
  if (mappable) {
    void *p = nullptr;
    if (Status s = check(vkMapMemory(dev, memory, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
        !s) {
      vkFreeMemory(dev, memory, nullptr);
      vkDestroyBuffer(dev, buffer, nullptr);
      return s;
    }
    mapped = static_cast<uint8_t *>(p);
  }
  std::unique_ptr<VulkanBuffer> b(
      new VulkanBuffer(bytes, space, space == MemorySpace::Host ? mapped : nullptr));
  b->ctx_ = std::move(ctx);
  b->buffer_ = buffer;
  b->memory_ = memory;
  b->mapped_ = mapped;
  b->allocated_ = allocated;
  // Zeroed, as Device::allocate promises.
  if (mapped) {
    std::memset(mapped, 0, allocated);
  } else {
    Status s = b->ctx_->runOnce([&](VkCommandBuffer cmd) {
      vkCmdFillBuffer(cmd, buffer, 0, VK_WHOLE_SIZE, 0);
    });
    if (!s)
      return s;
  }
  return b;
}

VulkanBuffer::~VulkanBuffer() {
  VkDevice dev = ctx_->device();
  if (mapped_)
    vkUnmapMemory(dev, memory_);
  vkDestroyBuffer(dev, buffer_, nullptr);
  vkFreeMemory(dev, memory_, nullptr);
}

Expected<std::unique_ptr<VulkanDevice>> VulkanDevice::open(const VulkanOptions &options) {
  auto ctx = VulkanContext::create(options);
  if (!ctx)
    return ctx.status();
  std::unique_ptr<VulkanDevice> d(new VulkanDevice());
  d->ctx_ = std::move(*ctx);
  d->pipelines_ = std::make_unique<PipelineLibrary>(d->ctx_);
  return d;
}

VulkanDevice::~VulkanDevice() {
  // Pipelines go before the context they were made in.
  pipelines_.reset();
}

std::string VulkanDevice::description() const {
  return "vulkan (" + ctx_->description() + ")";
}

Expected<std::unique_ptr<Buffer>> VulkanDevice::allocate(uint64_t bytes,
                                                         MemorySpace space) {
  auto b = VulkanBuffer::create(ctx_, bytes, space);
  if (!b)
    return b.status();
  return std::unique_ptr<Buffer>(std::move(*b));
}

Status VulkanDevice::staged(VulkanBuffer &buffer, uint64_t offset, void *data,
                            uint64_t bytes, bool toDevice) {
  // Chunks of at most 16 MiB through one host-visible buffer.
  constexpr uint64_t kChunk = 16ull << 20;
  auto staging = VulkanBuffer::create(ctx_, std::min(bytes, kChunk), MemorySpace::Host);
  if (!staging)
    return staging.status();
  VulkanBuffer &s = **staging;
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min(kChunk, bytes - done);
    uint8_t *host = static_cast<uint8_t *>(data) + done;
    if (toDevice)
      std::memcpy(s.mapped(), host, n);
    VkBufferCopy region{toDevice ? 0 : offset + done, toDevice ? offset + done : 0, n};
    FM_RETURN_IF_ERROR(ctx_->runOnce([&](VkCommandBuffer cmd) {
      if (toDevice)
        vkCmdCopyBuffer(cmd, s.handle(), buffer.handle(), 1, &region);
      else
        vkCmdCopyBuffer(cmd, buffer.handle(), s.handle(), 1, &region);
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT;
      vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT |
                               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           0, 1, &mb, 0, nullptr, 0, nullptr);
    }));
    if (!toDevice)
      std::memcpy(host, s.mapped(), n);
    done += n;
  }
  return Status::ok();
}

Status VulkanDevice::upload(Buffer &buffer, uint64_t offset, const void *data,
                            uint64_t bytes) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    return Status::error("vulkan: upload of " + std::to_string(bytes) +
                         " bytes at " + std::to_string(offset) +
                         " is outside a buffer of " + std::to_string(buffer.size()));
  auto &b = static_cast<VulkanBuffer &>(buffer);
  if (bytes == 0)
    return Status::ok();
  if (b.mapped()) {
    std::memcpy(b.mapped() + offset, data, bytes);
    return Status::ok();
  }
  return staged(b, offset, const_cast<void *>(data), bytes, true);
}

Status VulkanDevice::download(const Buffer &buffer, uint64_t offset, void *data,
                              uint64_t bytes) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    return Status::error("vulkan: download of " + std::to_string(bytes) +
                         " bytes at " + std::to_string(offset) +
                         " is outside a buffer of " + std::to_string(buffer.size()));
  auto &b = const_cast<VulkanBuffer &>(static_cast<const VulkanBuffer &>(buffer));
  if (bytes == 0)
    return Status::ok();
  if (b.mapped()) {
    std::memcpy(data, b.mapped() + offset, bytes);
    return Status::ok();
  }
  return staged(b, offset, data, bytes, false);
}

Expected<std::unique_ptr<Buffer>> VulkanDevice::importWeights(const uint8_t *data,
                                                              uint64_t bytes) {
  auto b = VulkanBuffer::create(ctx_, bytes, MemorySpace::Device);
  if (!b)
    return Status::error(b.message() + " (the weights)");
  FM_RETURN_IF_ERROR(upload(**b, 0, data, bytes));
  return std::unique_ptr<Buffer>(std::move(*b));
}

Expected<std::unique_ptr<Executable>>
VulkanDevice::loadExecutable(const artifact::Executable &executable,
                             const std::string &artifactName) {
  auto exe = VulkanExecutable::load(ctx_, executable, artifactName);
  if (!exe)
    return exe.status();
  return std::unique_ptr<Executable>(std::move(*exe));
}

Expected<std::unique_ptr<Queue>> VulkanDevice::createQueue(const QueueOptions &options) {
  auto q = VulkanQueue::create(ctx_, options);
  if (!q)
    return q.status();
  return std::unique_ptr<Queue>(std::move(*q));
}

} // namespace fm::hal::vk
