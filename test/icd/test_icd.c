// A Vulkan driver (ICD) for tests, in two builds (test/icd/CMakeLists.txt):
//
// fm_leaky_icd holds a heap block the way Mesa 22.3's lavapipe does on AMD
// Zen CPUs: its first vkEnumeratePhysicalDevices stores a 128-byte block
// (util_cpu_detect's L3 affinity mask) in a static, never freed. The block
// is reachable while the driver is loaded; once the Vulkan loader unloads
// the driver (vkDestroyInstance) nothing points at it, and LeakSanitizer
// reports a leak "in an unloaded module". Built without frame pointers, as
// Debian builds Mesa, so that ASan's fast unwinder stops inside it. It
// reports no physical devices (test/sanitize/vulkan_driver_leak.sh).
//
// fm_trap_icd (FM_TEST_ICD_TRAP) aborts the process the moment the loader
// loads it: a process that must not load a Vulkan driver proves it did not
// (e2e/device_probe.test).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vulkan/vulkan.h>

#define ICD_EXPORT __attribute__((visibility("default")))
#define ICD_LOADER_MAGIC 0x01CDC0DE

// A dispatchable handle's first word belongs to the loader.
struct Instance {
  uintptr_t loaderData;
};

static void *cpuTopology; // the driver's own static, as Mesa's util_cpu_caps

// Calls a few levels deep inside the driver, as Mesa's are (its
// physical-device setup, util_cpu_detect, get_cpu_topology).
__attribute__((noinline)) static void detectTopology(void) {
  if (!cpuTopology) {
    cpuTopology = realloc(cpuTopology, 128);
    if (cpuTopology)
      memset(cpuTopology, 0, 128);
  }
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void detectCpu(void) {
  detectTopology();
  __asm__ volatile("" ::: "memory");
}

static VKAPI_ATTR VkResult VKAPI_CALL createInstance(const VkInstanceCreateInfo *info,
                                                     const VkAllocationCallbacks *allocator,
                                                     VkInstance *instance) {
  (void)info;
  (void)allocator;
  struct Instance *i = calloc(1, sizeof(*i));
  if (!i)
    return VK_ERROR_OUT_OF_HOST_MEMORY;
  i->loaderData = ICD_LOADER_MAGIC;
  *instance = (VkInstance)i;
  return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL destroyInstance(VkInstance instance,
                                                  const VkAllocationCallbacks *allocator) {
  (void)allocator;
  free(instance);
}

static VKAPI_ATTR VkResult VKAPI_CALL enumeratePhysicalDevices(VkInstance instance,
                                                               uint32_t *count,
                                                               VkPhysicalDevice *devices) {
  (void)instance;
  (void)devices;
  detectCpu();
  *count = 0;
  return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL enumerateExtensions(const char *layer, uint32_t *count,
                                                          VkExtensionProperties *props) {
  (void)layer;
  (void)props;
  *count = 0;
  return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL enumerateVersion(uint32_t *version) {
  *version = VK_API_VERSION_1_3;
  return VK_SUCCESS;
}

ICD_EXPORT VKAPI_ATTR VkResult VKAPI_CALL vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *version) {
#if defined(FM_TEST_ICD_TRAP)
  static const char kMessage[] = "fm_trap_icd: a Vulkan driver was loaded\n";
  (void)!write(2, kMessage, sizeof(kMessage) - 1);
  abort();
#endif
  if (*version > 5)
    *version = 5;
  return VK_SUCCESS;
}

// The core instance functions the loader requires a driver to have; with no
// physical device none of them is ever called.
static VKAPI_ATTR void VKAPI_CALL neverCalled(void) { abort(); }

ICD_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vk_icdGetPhysicalDeviceProcAddr(VkInstance instance,
                                                                                   const char *name) {
  (void)instance;
  (void)name;
  return NULL;
}

ICD_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vk_icdGetInstanceProcAddr(VkInstance instance,
                                                                             const char *name) {
  (void)instance;
  if (!strcmp(name, "vkCreateInstance"))
    return (PFN_vkVoidFunction)createInstance;
  if (!strcmp(name, "vkDestroyInstance"))
    return (PFN_vkVoidFunction)destroyInstance;
  if (!strcmp(name, "vkEnumeratePhysicalDevices"))
    return (PFN_vkVoidFunction)enumeratePhysicalDevices;
  if (!strcmp(name, "vkEnumerateInstanceExtensionProperties"))
    return (PFN_vkVoidFunction)enumerateExtensions;
  if (!strcmp(name, "vkEnumerateInstanceVersion"))
    return (PFN_vkVoidFunction)enumerateVersion;
  if (!strncmp(name, "vkGetPhysicalDevice", 19) || !strcmp(name, "vkCreateDevice") ||
      !strncmp(name, "vkEnumerateDevice", 17) || !strcmp(name, "vkGetDeviceProcAddr"))
    return strstr(name, "KHR") || strstr(name, "EXT") ? NULL : (PFN_vkVoidFunction)neverCalled;
  return NULL;
}
