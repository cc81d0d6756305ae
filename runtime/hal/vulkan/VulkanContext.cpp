// Vulkan instance and device creation (VulkanContext.h).
#include "hal/vulkan/VulkanContext.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fm::hal::vk {
namespace {

constexpr const char *kValidationLayer = "VK_LAYER_KHRONOS_validation";

const char *typeName(VkPhysicalDeviceType t) {
  switch (t) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return "discrete";
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return "integrated";
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    return "virtual";
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    return "cpu";
  default:
    return "other";
  }
}

// Lower is better: the default never prefers a CPU implementation.
int typeRank(VkPhysicalDeviceType t) {
  switch (t) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return 0;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return 1;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    return 2;
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    return 4;
  default:
    return 3;
  }
}

std::string versionText(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." +
         std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

/// The features fm's kernels need, or why the device lacks them.
struct Features {
  VkPhysicalDeviceFeatures2 core{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features v11{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  Features() {
    core.pNext = &v11;
    v11.pNext = &v12;
  }
  Features(const Features &) = delete;
};

std::string missingFeatures(VkPhysicalDevice pd, Features &f) {
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(pd, &props);
  if (props.apiVersion < VK_API_VERSION_1_2)
    return "Vulkan " + versionText(props.apiVersion) + " (1.2 needed)";
  vkGetPhysicalDeviceFeatures2(pd, &f.core);
  std::string missing;
  auto need = [&](VkBool32 have, const char *name) {
    if (!have)
      missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  need(f.v11.storageBuffer16BitAccess, "storageBuffer16BitAccess");
  need(f.v12.storageBuffer8BitAccess, "storageBuffer8BitAccess");
  need(f.v12.shaderInt8, "shaderInt8");
  return missing.empty() ? "" : "no " + missing;
}

int computeFamily(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  for (uint32_t i = 0; i < n; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
      return static_cast<int>(i);
  return -1;
}

bool haveLayer(const char *name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (const VkLayerProperties &l : layers)
    if (std::strcmp(l.layerName, name) == 0)
      return true;
  return false;
}

Status createInstance(bool validation, VkInstance *out) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "fm";
  app.pEngineName = "fm";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  const char *layers[] = {kValidationLayer};
  const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  if (validation) {
    if (!haveLayer(kValidationLayer))
      return Status::error(std::string("vulkan: validation was asked for (FM_"
                                       "VULKAN_VALIDATION) but ") +
                           kValidationLayer +
                           " is not installed (vulkan-validationlayers)");
    ci.enabledLayerCount = 1;
    ci.ppEnabledLayerNames = layers;
    ci.enabledExtensionCount = 1;
    ci.ppEnabledExtensionNames = extensions;
  }
  return check(vkCreateInstance(&ci, nullptr, out), "vkCreateInstance");
}

/// The physical device to use: options.deviceIndex, else the best that
/// has what fm needs. `why` says why none fits.
VkPhysicalDevice choose(VkInstance instance, const VulkanOptions &options,
                        std::string *why) {
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance, &n, nullptr);
  std::vector<VkPhysicalDevice> devices(n);
  vkEnumeratePhysicalDevices(instance, &n, devices.data());
  if (n == 0) {
    *why = "no Vulkan device found";
    return VK_NULL_HANDLE;
  }
  if (options.deviceIndex >= 0) {
    if (uint32_t(options.deviceIndex) >= n) {
      *why = "FM_VULKAN_DEVICE=" + std::to_string(options.deviceIndex) +
             " but there are " + std::to_string(n) + " devices";
      return VK_NULL_HANDLE;
    }
    VkPhysicalDevice pd = devices[options.deviceIndex];
    Features f;
    std::string missing = missingFeatures(pd, f);
    if (!missing.empty() || computeFamily(pd) < 0) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(pd, &p);
      *why = std::string(p.deviceName) + ": " +
             (missing.empty() ? "no compute queue" : missing);
      return VK_NULL_HANDLE;
    }
    return pd;
  }
  VkPhysicalDevice best = VK_NULL_HANDLE;
  int bestRank = 1 << 30;
  std::string reasons;
  for (VkPhysicalDevice pd : devices) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pd, &p);
    Features f;
    std::string missing = missingFeatures(pd, f);
    if (missing.empty() && computeFamily(pd) < 0)
      missing = "no compute queue";
    if (!missing.empty()) {
      reasons += (reasons.empty() ? "" : "; ") + std::string(p.deviceName) +
                 ": " + missing;
      continue;
    }
    if (typeRank(p.deviceType) < bestRank) {
      best = pd;
      bestRank = typeRank(p.deviceType);
    }
  }
  if (!best)
    *why = "no Vulkan device has what fm's kernels need (" + reasons + ")";
  return best;
}

std::string describe(const VkPhysicalDeviceProperties &p) {
  return std::string(p.deviceName) + ", Vulkan " + versionText(p.apiVersion) +
         ", " + typeName(p.deviceType);
}

} // namespace

std::string resultName(VkResult r) {
  switch (r) {
#define FM_VK_CASE(x)                                                          \
  case x:                                                                      \
    return #x;
    FM_VK_CASE(VK_SUCCESS)
    FM_VK_CASE(VK_NOT_READY)
    FM_VK_CASE(VK_TIMEOUT)
    FM_VK_CASE(VK_INCOMPLETE)
    FM_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    FM_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    FM_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
    FM_VK_CASE(VK_ERROR_DEVICE_LOST)
    FM_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    FM_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    FM_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    FM_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    FM_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    FM_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    FM_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    FM_VK_CASE(VK_ERROR_FRAGMENTED_POOL)
    FM_VK_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    FM_VK_CASE(VK_ERROR_INVALID_SHADER_NV)
#undef FM_VK_CASE
  default:
    return "VkResult " + std::to_string(static_cast<int>(r));
  }
}

Status check(VkResult result, const char *what) {
  if (result == VK_SUCCESS)
    return Status::ok();
  return Status::error(std::string("vulkan: ") + what + " failed: " +
                       resultName(result));
}

VulkanOptions VulkanOptions::fromEnvironment() {
  VulkanOptions o;
  if (const char *d = std::getenv("FM_VULKAN_DEVICE"); d && *d)
    o.deviceIndex = std::atoi(d);
  if (const char *v = std::getenv("FM_VULKAN_VALIDATION"); v && *v && *v != '0')
    o.validation = true;
  if (const char *n = std::getenv("FM_VULKAN_MAX_STORAGE_BUFFERS"); n && *n) {
    char *end = nullptr;
    const unsigned long v = std::strtoul(n, &end, 10);
    if (*end || v == 0 || v > 1024) // a typo must not silently test the wrong path
      std::fprintf(stderr,
                   "fm: FM_VULKAN_MAX_STORAGE_BUFFERS='%s' is not a count in 1..1024; ignored\n",
                   n);
    else
      o.maxStorageBuffers = uint32_t(v);
  }
  return o;
}

VulkanProbe probeVulkan(const VulkanOptions &options) {
  VulkanProbe probe;
  VkInstance instance = VK_NULL_HANDLE;
  // Probing never needs the validation layer.
  if (Status s = createInstance(false, &instance); !s) {
    probe.description = s.message();
    return probe;
  }
  std::string why;
  VkPhysicalDevice pd = choose(instance, options, &why);
  if (pd) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pd, &p);
    probe.found = true;
    probe.cpu = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    probe.description = describe(p);
  } else {
    probe.description = why;
  }
  vkDestroyInstance(instance, nullptr);
  return probe;
}

Expected<std::shared_ptr<VulkanContext>>
VulkanContext::create(const VulkanOptions &options) {
  std::shared_ptr<VulkanContext> c(new VulkanContext());
  FM_RETURN_IF_ERROR(c->init(options));
  return c;
}

VkBool32 VKAPI_PTR VulkanContext::onMessage(
    VkDebugUtilsMessageSeverityFlagBitsEXT,
    VkDebugUtilsMessageTypeFlagsEXT,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
  auto *self = static_cast<VulkanContext *>(user);
  self->messages_.fetch_add(1);
  std::fprintf(stderr, "fm: vulkan validation: %s\n",
               data && data->pMessage ? data->pMessage : "(no message)");
  return VK_FALSE;
}

Status VulkanContext::init(const VulkanOptions &options) {
  options_ = options;
  FM_RETURN_IF_ERROR(createInstance(options.validation, &instance_));
  if (options.validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (!create)
      return Status::error("vulkan: the validation layer has no debug utils");
    VkDebugUtilsMessengerCreateInfoEXT ci{
        VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    // Warnings and errors; performance warnings count too (they name
    // misuse, such as a barrier that is not needed).
    ci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    ci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    ci.pfnUserCallback = &VulkanContext::onMessage;
    ci.pUserData = this;
    FM_RETURN_IF_ERROR(check(create(instance_, &ci, nullptr, &messenger_),
                             "vkCreateDebugUtilsMessengerEXT"));
  }
  std::string why;
  physical_ = choose(instance_, options, &why);
  if (!physical_)
    return Status::error("vulkan: " + why);
  vkGetPhysicalDeviceProperties(physical_, &props_);
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  family_ = static_cast<uint32_t>(computeFamily(physical_));
  description_ = describe(props_);

  // Enable what the kernels use: 8/16-bit storage and int8 (required, see
  // choose), 16-bit ints and floats where present (generated SPIR-V may
  // declare them; the validation layer requires the features then).
  Features have;
  missingFeatures(physical_, have);
  Features on;
  on.v11.storageBuffer16BitAccess = VK_TRUE;
  on.v12.storageBuffer8BitAccess = VK_TRUE;
  on.v12.shaderInt8 = VK_TRUE;
  on.v12.shaderFloat16 = have.v12.shaderFloat16;
  on.core.features.shaderInt16 = have.core.features.shaderInt16;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.pNext = &on.core;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  FM_RETURN_IF_ERROR(
      check(vkCreateDevice(physical_, &di, nullptr, &device_), "vkCreateDevice"));
  vkGetDeviceQueue(device_, family_, 0, &queue_);

  maxRange_ = props_.limits.maxStorageBufferRange;
  if (options.maxRange > 0)
    maxRange_ = std::min<uint64_t>(maxRange_, options.maxRange);
  storageBuffers_ = props_.limits.maxPerStageDescriptorStorageBuffers;
  if (options.maxStorageBuffers > 0)
    storageBuffers_ = std::min(storageBuffers_, options.maxStorageBuffers);
  offsetAlign_ = std::max<uint64_t>(
      16, props_.limits.minStorageBufferOffsetAlignment);
  uint32_t nf = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nf, nullptr);
  std::vector<VkQueueFamilyProperties> families(nf);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nf, families.data());
  timestamps_ = props_.limits.timestampComputeAndGraphics &&
                families[family_].timestampValidBits > 0;

  VkPipelineCacheCreateInfo pc{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  FM_RETURN_IF_ERROR(check(
      vkCreatePipelineCache(device_, &pc, nullptr, &pipelineCache_),
      "vkCreatePipelineCache"));

  VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = family_;
  FM_RETURN_IF_ERROR(check(vkCreateCommandPool(device_, &cp, nullptr, &oncePool_),
                           "vkCreateCommandPool"));
  VkCommandBufferAllocateInfo ca{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ca.commandPool = oncePool_;
  ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ca.commandBufferCount = 1;
  FM_RETURN_IF_ERROR(check(vkAllocateCommandBuffers(device_, &ca, &onceCmd_),
                           "vkAllocateCommandBuffers"));
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  return check(vkCreateFence(device_, &fi, nullptr, &onceFence_), "vkCreateFence");
}

VulkanContext::~VulkanContext() {
  if (device_) {
    vkDeviceWaitIdle(device_);
    if (onceFence_)
      vkDestroyFence(device_, onceFence_, nullptr);
    if (oncePool_)
      vkDestroyCommandPool(device_, oncePool_, nullptr);
    if (pipelineCache_)
      vkDestroyPipelineCache(device_, pipelineCache_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy)
      destroy(instance_, messenger_, nullptr);
  }
  if (instance_)
    vkDestroyInstance(instance_, nullptr);
}

Expected<uint32_t> VulkanContext::memoryType(uint32_t typeBits, bool host) const {
  const VkMemoryPropertyFlags mappable = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                         VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  // In order of preference.
  std::vector<VkMemoryPropertyFlags> wanted;
  if (host)
    wanted = {mappable};
  else
    wanted = {local | mappable, local, mappable};
  for (VkMemoryPropertyFlags want : wanted)
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
      if ((typeBits & (1u << i)) &&
          (memory_.memoryTypes[i].propertyFlags & want) == want)
        return i;
  return Status::error("vulkan: no suitable memory type (" +
                       std::string(host ? "host-visible" : "device") + ")");
}

bool VulkanContext::isHostVisible(uint32_t type) const {
  const VkMemoryPropertyFlags f = memory_.memoryTypes[type].propertyFlags;
  return (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
         (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
}

Status VulkanContext::submit(VkCommandBuffer cmd, VkFence fence) {
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  std::lock_guard<std::mutex> lock(submitMutex_);
  return check(vkQueueSubmit(queue_, 1, &si, fence), "vkQueueSubmit");
}

Status VulkanContext::runOnce(const std::function<void(VkCommandBuffer)> &record) {
  std::lock_guard<std::mutex> lock(onceMutex_);
  FM_RETURN_IF_ERROR(check(vkResetCommandBuffer(onceCmd_, 0), "vkResetCommandBuffer"));
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  FM_RETURN_IF_ERROR(check(vkBeginCommandBuffer(onceCmd_, &bi), "vkBeginCommandBuffer"));
  record(onceCmd_);
  FM_RETURN_IF_ERROR(check(vkEndCommandBuffer(onceCmd_), "vkEndCommandBuffer"));
  FM_RETURN_IF_ERROR(submit(onceCmd_, onceFence_));
  FM_RETURN_IF_ERROR(check(vkWaitForFences(device_, 1, &onceFence_, VK_TRUE, UINT64_MAX),
                           "vkWaitForFences"));
  return check(vkResetFences(device_, 1, &onceFence_), "vkResetFences");
}

} // namespace fm::hal::vk
