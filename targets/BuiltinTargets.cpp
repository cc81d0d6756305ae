// The targets of this build, registered once.
#include "targets/BuiltinTargets.h"

#include "targets/cpu/CpuTarget.h"
#include "targets/vulkan/VulkanTarget.h"

#include <mutex>

namespace fm::target {

void registerBuiltinTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    cpu::registerCpuTarget();
    vulkan::registerVulkanTarget();
  });
}

} // namespace fm::target
