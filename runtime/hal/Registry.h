// The devices this runtime knows, which of them are built in and present,
// and the default choice (fm-run --device, fm::LoadOptions::device).
#pragma once

#include "fm/status.h"
#include "hal/Device.h"

#include <memory>
#include <string>
#include <vector>

namespace fm::hal {

struct DeviceInfo {
  std::string name;    // "cuda", "metal", "vulkan", "cpu"
  bool builtIn = false; // compiled into this runtime
  bool present = false; // built in and found on this machine
  /// A hardware device (a GPU, or the CPU itself), not a software emulation
  /// of one such as Mesa's lavapipe; the default never picks a software one.
  bool hardware = false;
  std::string description; // what was found, or why it is absent
};

/// Every device kind fmc has a target for, best first (the default order):
/// cuda, metal, vulkan, cpu.
std::vector<DeviceInfo> probeDevices();

/// The names probeDevices() lists, for messages ("cuda, metal, vulkan, cpu").
std::string knownDeviceNames();

/// Opens device `name`: an error names what is missing (an unknown name, a
/// device this runtime was built without, or one not found here).
Expected<std::unique_ptr<Device>> openDevice(const std::string &name);

} // namespace fm::hal
