// Device probing and opening. Each device kind is built in when its
// dependencies are found at build time (the CPU always); a kind that is not
// gets a clear error instead of a missing symbol.
#include "hal/Registry.h"

#include "hal/cpu/CpuDevice.h"
#if defined(FM_HAVE_VULKAN)
#include "hal/vulkan/VulkanDevice.h"
#endif
#ifdef FM_HAL_CUDA
#include "hal/cuda/CudaDevice.h"
#endif
#if defined(FM_HAVE_METAL)
#include "hal/metal/MetalProbe.h"
#endif

namespace fm::hal {
namespace {

struct Kind {
  const char *name;
  /// Null when the kind is not built into this runtime.
  DeviceInfo (*probe)();
  Expected<std::unique_ptr<Device>> (*open)(const DeviceOptions &);
};

DeviceInfo probeCpu() {
  DeviceInfo info;
  info.name = "cpu";
  info.builtIn = info.present = info.hardware = true;
  info.description = CpuDevice().description();
  return info;
}

Expected<std::unique_ptr<Device>> openCpu(const DeviceOptions &) {
  return std::unique_ptr<Device>(new CpuDevice());
}

#if defined(FM_HAVE_VULKAN)
// A CPU implementation of Vulkan (Mesa's lavapipe, SwiftShader) is present
// but not hardware: only an explicit --device vulkan runs on it.
DeviceInfo probeVulkan() {
  const vk::VulkanProbe probe = vk::probeVulkan(vk::VulkanOptions::fromEnvironment());
  DeviceInfo info;
  info.name = "vulkan";
  info.builtIn = true;
  info.present = probe.found;
  info.hardware = probe.found && !probe.cpu;
  info.description = probe.found ? "vulkan (" + probe.description + ")"
                                 : probe.description;
  return info;
}

Expected<std::unique_ptr<Device>> openVulkan(const DeviceOptions &) {
  auto device = vk::VulkanDevice::open(vk::VulkanOptions::fromEnvironment());
  if (!device)
    return device.status();
  return std::unique_ptr<Device>(std::move(*device));
}
#define FM_VULKAN_KIND {"vulkan", probeVulkan, openVulkan}
#else
#define FM_VULKAN_KIND {"vulkan", nullptr, nullptr}
#endif

#if defined(FM_HAVE_METAL)
// Apple platforms only (runtime/hal/metal, unverified: never built by the
// project). Every Metal device is a hardware GPU.
DeviceInfo probeMetal() {
  const mtl::MetalProbe probe = mtl::probeMetal();
  DeviceInfo info;
  info.name = "metal";
  info.builtIn = true;
  info.present = info.hardware = probe.found;
  info.description = probe.found ? "metal (" + probe.description + ")" : probe.description;
  return info;
}
Expected<std::unique_ptr<Device>> openMetal(const DeviceOptions &) {
  return mtl::openMetalDevice();
}
#define FM_METAL_KIND {"metal", probeMetal, openMetal}
#else
#define FM_METAL_KIND {"metal", nullptr, nullptr}
#endif

#ifdef FM_HAL_CUDA
Expected<std::unique_ptr<Device>> openCuda(const DeviceOptions &options) {
  cuda::CudaOptions cudaOptions;
  cudaOptions.graphs = options.cudaGraphs;
  // One GPU per rank of a node (defaultOrdinal), or FM_CUDA_DEVICE's.
  auto d = cuda::CudaDevice::openDefault(cudaOptions);
  if (!d)
    return d.status();
  return std::unique_ptr<Device>(std::move(*d));
}
#endif

// Best first: the default takes the first present hardware device.
const Kind kKinds[] = {
#ifdef FM_HAL_CUDA
    {"cuda", cuda::probe, openCuda},
#else
    {"cuda", nullptr, nullptr},
#endif
    FM_METAL_KIND,
    FM_VULKAN_KIND,
    {"cpu", probeCpu, openCpu},
};

} // namespace

DeviceInfo probeDevice(const std::string &name) {
  for (const Kind &k : kKinds) {
    if (name != k.name)
      continue;
    if (k.probe)
      return k.probe();
    break;
  }
  DeviceInfo info;
  info.name = name;
  info.description = "not built into this runtime";
  return info;
}

std::vector<DeviceInfo> probeDevices() {
  std::vector<DeviceInfo> out;
  for (const Kind &k : kKinds)
    out.push_back(probeDevice(k.name));
  return out;
}

std::vector<std::string> deviceNames() {
  std::vector<std::string> names;
  for (const Kind &k : kKinds)
    names.push_back(k.name);
  return names;
}

std::string knownDeviceNames() {
  std::string s;
  for (const Kind &k : kKinds)
    s += (s.empty() ? "" : ", ") + std::string(k.name);
  return s;
}

Expected<std::unique_ptr<Device>> openDevice(const std::string &name,
                                             const DeviceOptions &options) {
  for (const Kind &k : kKinds) {
    if (name != k.name)
      continue;
    if (!k.open) {
      std::string builtIn;
      for (const Kind &b : kKinds)
        if (b.open)
          builtIn += (builtIn.empty() ? "" : ", ") + std::string(b.name);
      return Status::error("device '" + name +
                           "' is not built into this runtime (rebuild with "
                           "its SDK installed; built in: " +
                           builtIn + ")");
    }
    DeviceInfo info = k.probe();
    if (!info.present)
      return Status::error("device '" + name + "' is not available here: " +
                           info.description);
    return k.open(options);
  }
  return Status::error("unknown device '" + name + "' (known: " +
                       knownDeviceNames() + ")");
}

} // namespace fm::hal
