// The targets of this build, registered once.
#include "targets/BuiltinTargets.h"

#include "targets/cpu/CpuTarget.h"
#include "targets/cuda/CudaTarget.h"
#include "targets/vulkan/VulkanTarget.h"
#if defined(FM_HAVE_METAL_TARGET)
#include "targets/metal/MetalTarget.h"
#endif

#include <mutex>

namespace fm::target {

void registerBuiltinTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    cpu::registerCpuTarget();
    vulkan::registerVulkanTarget();
    cuda::registerCudaTarget();
#if defined(FM_HAVE_METAL_TARGET)
    metal::registerMetalTarget();
#endif
  });
}

} // namespace fm::target
