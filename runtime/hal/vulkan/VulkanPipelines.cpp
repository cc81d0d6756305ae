// Pipelines and descriptor sets (VulkanPipelines.h).
#include "hal/vulkan/VulkanPipelines.h"

#include "hal/vulkan/VulkanDevice.h"
#include "hal/vulkan/VulkanShaders.h"

#include <cstring>

namespace fm::hal::vk {

Status checkStorageBuffers(const VulkanContext &ctx, uint32_t bindings,
                           const std::string &kernel) {
  if (bindings <= ctx.storageBuffers())
    return Status::ok();
  return Status::error("vulkan: kernel " + kernel + " binds " + std::to_string(bindings) +
                       " storage buffers; this device allows " +
                       std::to_string(ctx.storageBuffers()) +
                       " per shader stage (maxPerStageDescriptorStorageBuffers)");
}

Expected<VkShaderModule> createShaderModule(VulkanContext &ctx,
                                            const uint32_t *words, size_t count) {
  VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  ci.codeSize = count * sizeof(uint32_t);
  ci.pCode = words;
  VkShaderModule module = VK_NULL_HANDLE;
  FM_RETURN_IF_ERROR(check(vkCreateShaderModule(ctx.device(), &ci, nullptr, &module),
                           "vkCreateShaderModule"));
  return module;
}

Expected<Pipeline> createPipeline(VulkanContext &ctx, VkShaderModule module,
                                  const char *entry, uint32_t bindings,
                                  uint32_t pushBytes,
                                  const std::vector<uint32_t> &spec) {
  Pipeline p;
  p.bindings = bindings;
  p.pushBytes = pushBytes;
  std::vector<VkDescriptorSetLayoutBinding> b(bindings);
  for (uint32_t i = 0; i < bindings; ++i) {
    b[i].binding = i;
    b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo si{
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  si.bindingCount = bindings;
  si.pBindings = b.data();
  FM_RETURN_IF_ERROR(
      check(vkCreateDescriptorSetLayout(ctx.device(), &si, nullptr, &p.setLayout),
            "vkCreateDescriptorSetLayout"));
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, pushBytes};
  VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  li.setLayoutCount = 1;
  li.pSetLayouts = &p.setLayout;
  li.pushConstantRangeCount = pushBytes ? 1 : 0;
  li.pPushConstantRanges = &range;
  if (Status s = check(vkCreatePipelineLayout(ctx.device(), &li, nullptr, &p.layout),
                       "vkCreatePipelineLayout");
      !s) {
    destroyPipeline(ctx, p);
    return s;
  }
  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (size_t i = 0; i < spec.size(); ++i)
    entries[i] = {uint32_t(i), uint32_t(i * sizeof(uint32_t)), sizeof(uint32_t)};
  VkSpecializationInfo specInfo{uint32_t(entries.size()), entries.data(),
                                spec.size() * sizeof(uint32_t), spec.data()};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = entry;
  ci.stage.pSpecializationInfo = spec.empty() ? nullptr : &specInfo;
  ci.layout = p.layout;
  if (Status s = check(vkCreateComputePipelines(ctx.device(), ctx.pipelineCache(), 1,
                                                &ci, nullptr, &p.pipeline),
                       "vkCreateComputePipelines");
      !s) {
    destroyPipeline(ctx, p);
    return Status::error(s.message() + " (entry point '" + entry + "')");
  }
  return p;
}

void destroyPipeline(VulkanContext &ctx, Pipeline &p) {
  if (p.pipeline)
    vkDestroyPipeline(ctx.device(), p.pipeline, nullptr);
  if (p.layout)
    vkDestroyPipelineLayout(ctx.device(), p.layout, nullptr);
  if (p.setLayout)
    vkDestroyDescriptorSetLayout(ctx.device(), p.setLayout, nullptr);
  p = Pipeline();
}

PipelineLibrary::PipelineLibrary(std::shared_ptr<VulkanContext> ctx)
    : ctx_(std::move(ctx)) {}

PipelineLibrary::~PipelineLibrary() {
  for (auto &[key, p] : pipelines_)
    destroyPipeline(*ctx_, *p);
  for (auto &[name, m] : modules_)
    vkDestroyShaderModule(ctx_->device(), m, nullptr);
}

Expected<const Pipeline *> PipelineLibrary::get(const std::string &shader,
                                                uint32_t bindings,
                                                uint32_t pushBytes,
                                                const std::vector<uint32_t> &spec) {
  std::string key = shader;
  for (uint32_t v : spec)
    key += ":" + std::to_string(v);
  FM_RETURN_IF_ERROR(checkStorageBuffers(*ctx_, bindings, shader));
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = pipelines_.find(key); it != pipelines_.end())
    return static_cast<const Pipeline *>(it->second.get());
  VkShaderModule module = VK_NULL_HANDLE;
  if (auto it = modules_.find(shader); it != modules_.end()) {
    module = it->second;
  } else {
    const ShaderCode *code = nullptr;
    for (size_t i = 0; i < kNumShaders; ++i)
      if (shader == kShaders[i].name)
        code = &kShaders[i];
    if (!code)
      return Status::error("vulkan: no kernel '" + shader + "' in this runtime");
    auto m = createShaderModule(*ctx_, code->words, code->count);
    if (!m)
      return m.status();
    module = modules_[shader] = *m;
  }
  auto p = createPipeline(*ctx_, module, "main", bindings, pushBytes, spec);
  if (!p)
    return Status::error(p.message() + " (kernel " + shader + ")");
  auto &slot = pipelines_[key];
  slot = std::make_unique<Pipeline>(*p);
  return static_cast<const Pipeline *>(slot.get());
}

Expected<BoundRange> bindRange(const VulkanContext &ctx, const VulkanBuffer &buffer,
                               uint64_t offset, uint64_t bytes, uint32_t elemSize,
                               const std::string &what) {
  BoundRange r;
  r.buffer = buffer.handle();
  r.offset = offset / ctx.offsetAlignment() * ctx.offsetAlignment();
  if ((offset - r.offset) % elemSize != 0)
    return Status::error("vulkan: " + what + " at byte " + std::to_string(offset) +
                         " is not aligned to its " + std::to_string(elemSize) +
                         "-byte elements");
  r.elem = static_cast<uint32_t>((offset - r.offset) / elemSize);
  r.range = offset + std::max<uint64_t>(bytes, elemSize) - r.offset;
  // The buffer is at least 16 bytes (VulkanBuffer rounds up); a range may
  // run past a small tail only by the rounding of elemSize.
  r.range = std::min<uint64_t>(r.range, buffer.allocatedSize() - r.offset);
  if (r.range > ctx.maxRange())
    return Status::error("vulkan: " + what + " spans " + std::to_string(r.range) +
                         " bytes, more than one storage-buffer binding covers "
                         "on this device (maxStorageBufferRange " +
                         std::to_string(ctx.maxRange()) + ")");
  return r;
}

DescriptorSets::~DescriptorSets() {
  for (VkDescriptorPool p : pools_)
    vkDestroyDescriptorPool(ctx_->device(), p, nullptr);
}

Expected<VkDescriptorSet> DescriptorSets::make(const Pipeline &p,
                                               const std::vector<BoundRange> &ranges) {
  // Pools of 8 sets of up to 8 buffers each; a kernel needs a few.
  constexpr uint32_t kSets = 8, kPerSet = 8;
  if (p.bindings > kPerSet)
    return Status::error("vulkan: a kernel binds " + std::to_string(p.bindings) +
                         " buffers (at most " + std::to_string(kPerSet) + ")");
  if (left_ == 0) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSets * kPerSet};
    VkDescriptorPoolCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    ci.maxSets = kSets;
    ci.poolSizeCount = 1;
    ci.pPoolSizes = &size;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    FM_RETURN_IF_ERROR(check(vkCreateDescriptorPool(ctx_->device(), &ci, nullptr, &pool),
                             "vkCreateDescriptorPool"));
    pools_.push_back(pool);
    left_ = kSets;
  }
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pools_.back();
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &p.setLayout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  FM_RETURN_IF_ERROR(check(vkAllocateDescriptorSets(ctx_->device(), &ai, &set),
                           "vkAllocateDescriptorSets"));
  --left_;
  write(set, ranges);
  return set;
}

void DescriptorSets::write(VkDescriptorSet set, const std::vector<BoundRange> &ranges) {
  std::vector<VkDescriptorBufferInfo> infos(ranges.size());
  std::vector<VkWriteDescriptorSet> writes(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    infos[i] = {ranges[i].buffer, ranges[i].offset, ranges[i].range};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = uint32_t(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(ctx_->device(), uint32_t(writes.size()), writes.data(), 0,
                         nullptr);
}

} // namespace fm::hal::vk
