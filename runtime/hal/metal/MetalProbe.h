// The Metal device as the registry (hal/Registry.cpp) sees it: plain C++,
// so that the registry stays a C++ file; the device itself is Objective-C++
// (MetalDevice.h). Built only on Apple platforms (FM_HAVE_METAL).
#pragma once

#include "fm/status.h"
#include "hal/Device.h"

#include <memory>
#include <string>

namespace fm::hal::mtl {

/// What probing found.
struct MetalProbe {
  bool found = false;      // MTLCreateSystemDefaultDevice gave a device
  std::string description; // the device, or why there is none
};

/// Finds the device openMetalDevice would open.
MetalProbe probeMetal();

/// The system default Metal device.
Expected<std::unique_ptr<Device>> openMetalDevice();

} // namespace fm::hal::mtl
