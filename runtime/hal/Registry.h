// The devices this runtime knows, which of them are built in and present,
// and the default choice (fm-run --device, fm::LoadOptions::device).
#pragma once

#include "fm/device_info.h"
#include "fm/status.h"
#include "hal/Device.h"

#include <memory>
#include <string>
#include <vector>

namespace fm::hal {

using fm::DeviceInfo;

/// Every device kind fmc has a target for, best first (the default order):
/// cuda, metal, vulkan, cpu.
std::vector<DeviceInfo> probeDevices();

/// Probes the one device kind `name` (as probeDevices() lists it), loading
/// no other kind's driver; an unknown name is a DeviceInfo that is not built
/// in. The default choice probes only the kinds an artifact has code for, so
/// that a process running CPU code never loads a GPU driver.
DeviceInfo probeDevice(const std::string &name);

/// The names probeDevices() lists, best first.
std::vector<std::string> deviceNames();

/// The names probeDevices() lists, for messages ("cuda, metal, vulkan, cpu").
std::string knownDeviceNames();

/// How a device is opened (fm::LoadOptions' device settings); each device
/// reads the fields that are its own.
struct DeviceOptions {
  /// CUDA: replay the recorded launches of a run as CUDA graphs (fm-run
  /// --no-cuda-graph: false, every kernel launched directly).
  bool cudaGraphs = true;
};

/// Opens device `name`: an error names what is missing (an unknown name, a
/// device this runtime was built without, or one not found here).
Expected<std::unique_ptr<Device>> openDevice(const std::string &name,
                                             const DeviceOptions &options = {});

} // namespace fm::hal
