// A session's command recording and submission (VulkanDevice.h).
#include "hal/vulkan/VulkanDevice.h"

#include <algorithm>

namespace fm::hal::vk {

Expected<std::unique_ptr<VulkanQueue>>
VulkanQueue::create(std::shared_ptr<VulkanContext> ctx, const QueueOptions &options) {
  std::unique_ptr<VulkanQueue> q(new VulkanQueue(ctx));
  VkDevice dev = ctx->device();
  VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = ctx->queueFamily();
  FM_RETURN_IF_ERROR(
      check(vkCreateCommandPool(dev, &cp, nullptr, &q->pool_), "vkCreateCommandPool"));
  VkCommandBufferAllocateInfo ca{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ca.commandPool = q->pool_;
  ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ca.commandBufferCount = 1;
  FM_RETURN_IF_ERROR(
      check(vkAllocateCommandBuffers(dev, &ca, &q->cmd_), "vkAllocateCommandBuffers"));
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  FM_RETURN_IF_ERROR(check(vkCreateFence(dev, &fi, nullptr, &q->fence_), "vkCreateFence"));
  if (ctx->timestamps()) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2;
    FM_RETURN_IF_ERROR(
        check(vkCreateQueryPool(dev, &qi, nullptr, &q->queries_), "vkCreateQueryPool"));
  }
  if (options.scratchBytes > 0) {
    auto s = VulkanBuffer::create(ctx, options.scratchBytes, MemorySpace::Device);
    if (!s)
      return Status::error(s.message() + " (kernel scratch)");
    q->scratch_ = std::move(*s);
  }
  return q;
}

VulkanQueue::~VulkanQueue() {
  VkDevice dev = ctx_->device();
  if (recording_) {
    vkEndCommandBuffer(cmd_);
    recording_ = false;
  }
  if (queries_)
    vkDestroyQueryPool(dev, queries_, nullptr);
  if (fence_)
    vkDestroyFence(dev, fence_, nullptr);
  if (pool_)
    vkDestroyCommandPool(dev, pool_, nullptr);
}

void VulkanQueue::runConcurrently(int64_t n, const std::function<void(int64_t)> &fn) {
  // One command stream: tracks are recorded in turn (the GPU runs each
  // dispatch wide instead).
  for (int64_t i = 0; i < n; ++i)
    fn(i);
}

Status VulkanQueue::begin() {
  if (recording_)
    return Status::ok();
  FM_RETURN_IF_ERROR(check(vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer"));
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  FM_RETURN_IF_ERROR(check(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer"));
  if (queries_) {
    vkCmdResetQueryPool(cmd_, queries_, 0, 2);
    vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, 0);
  }
  recording_ = true;
  dirty_ = false;
  return Status::ok();
}

void VulkanQueue::barrier() {
  // Everything written by earlier dispatches is visible to later ones, as
  // storage data and as indirect dispatch sizes.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                           VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT,
                       0, 1, &mb, 0, nullptr, 0, nullptr);
  dirty_ = false;
  ++barriers_;
}

Status VulkanQueue::dispatch(const Pipeline &p, VkDescriptorSet set, const void *push,
                             uint32_t x, uint32_t y, uint32_t z, bool independent) {
  if (x == 0 || y == 0 || z == 0)
    return Status::ok();
  FM_RETURN_IF_ERROR(begin());
  if (dirty_ && !independent)
    barrier();
  vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set,
                          0, nullptr);
  if (p.pushBytes)
    vkCmdPushConstants(cmd_, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.pushBytes, push);
  vkCmdDispatch(cmd_, x, y, z);
  dirty_ = true;
  ++dispatches_;
  return Status::ok();
}

Status VulkanQueue::dispatchIndirect(const Pipeline &p, VkDescriptorSet set,
                                     const void *push, VkBuffer args, uint64_t offset,
                                     bool independent) {
  FM_RETURN_IF_ERROR(begin());
  if (dirty_ && !independent)
    barrier();
  vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set,
                          0, nullptr);
  if (p.pushBytes)
    vkCmdPushConstants(cmd_, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.pushBytes, push);
  vkCmdDispatchIndirect(cmd_, args, offset);
  dirty_ = true;
  ++dispatches_;
  return Status::ok();
}

Status VulkanQueue::update(const VulkanBuffer &buffer, uint64_t offset, const void *data,
                           uint64_t bytes) {
  FM_RETURN_IF_ERROR(begin());
  VkMemoryBarrier before{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  before.srcAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  before.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, nullptr, 0,
                       nullptr);
  // vkCmdUpdateBuffer takes at most 65536 bytes a call.
  const auto *p = static_cast<const uint8_t *>(data);
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min<uint64_t>(65536, bytes - done);
    vkCmdUpdateBuffer(cmd_, buffer.handle(), offset + done, n, p + done);
    done += n;
  }
  VkMemoryBarrier after{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  after.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  after.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &after, 0, nullptr, 0,
                       nullptr);
  dirty_ = false;
  return Status::ok();
}

Status VulkanQueue::flush() {
  if (!recording_)
    return Status::ok();
  // Results become visible to the host (downloads through the mapping).
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                       1, &mb, 0, nullptr, 0, nullptr);
  if (queries_)
    vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 1);
  recording_ = false;
  FM_RETURN_IF_ERROR(check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer"));
  FM_RETURN_IF_ERROR(ctx_->submit(cmd_, fence_));
  VkDevice dev = ctx_->device();
  FM_RETURN_IF_ERROR(
      check(vkWaitForFences(dev, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences"));
  FM_RETURN_IF_ERROR(check(vkResetFences(dev, 1, &fence_), "vkResetFences"));
  if (queries_) {
    uint64_t t[2] = {0, 0};
    if (vkGetQueryPoolResults(dev, queries_, 0, 2, sizeof(t), t, sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) ==
            VK_SUCCESS &&
        t[1] >= t[0])
      deviceMs_ += double(t[1] - t[0]) * ctx_->timestampPeriod() * 1e-6;
  }
  return Status::ok();
}

} // namespace fm::hal::vk
