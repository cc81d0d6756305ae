// What the runtime knows of one device kind (fm::probeDevices(), the HAL's
// registry).
#pragma once

#include <string>

namespace fm {

struct DeviceInfo {
  std::string name;     // "cuda", "metal", "vulkan", "cpu"
  bool builtIn = false; // compiled into this runtime
  bool present = false; // built in and found on this machine
  /// Hardware (a GPU, or the CPU), not a software emulation such as Mesa's
  /// lavapipe: the default device choice takes only hardware.
  bool hardware = false;
  std::string description; // what was found, or why it is absent
};

} // namespace fm
