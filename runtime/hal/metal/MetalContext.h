// The Metal device, command queue and MSL compilation that one Metal device
// (MetalDevice.h) and everything it creates share. Objective-C++ (ARC).
#pragma once

#if !defined(__OBJC__)
#error "hal/metal/MetalContext.h is Objective-C++: include it from .mm files"
#endif

#include "fm/status.h"

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <cstdint>
#include <memory>
#include <string>

namespace fm::hal::mtl {

/// "what: <NSError's localizedDescription>".
Status nsError(NSError *error, const std::string &what);

/// A std::string's NSString, and back.
NSString *toNs(const std::string &s);
std::string fromNs(NSString *s);

/// A compiled kernel. (A struct, not a bare id, so that Expected holds a
/// plain C++ type: ARC retains and releases the member.)
struct CompiledKernel {
  id<MTLComputePipelineState> state = nil;
};

class MetalContext {
public:
  static Expected<std::shared_ptr<MetalContext>> create();
  MetalContext(const MetalContext &) = delete;
  MetalContext &operator=(const MetalContext &) = delete;

  id<MTLDevice> device() const { return device_; }
  id<MTLCommandQueue> queue() const { return queue_; }
  /// "Apple M2 Pro, unified memory".
  std::string description() const;

  /// Buffer offsets bound with setBuffer:offset:atIndex: are rounded down
  /// to this, the rest passed to the kernel as an element offset (as the
  /// Vulkan device does with minStorageBufferOffsetAlignment): 16 bytes
  /// satisfies Metal's rule that a device-buffer offset be aligned to the
  /// type the kernel reads (at most 16 bytes).
  static constexpr uint64_t kOffsetAlignment = 16;

  /// Compiles one MSL translation unit (MSL 2.3) and makes a pipeline of
  /// its kernel `entry`, with function constants `constants` (nil: none
  /// set, every constant at its default).
  /// Errors name `what`.
  Expected<CompiledKernel>
  compile(const std::string &source, const std::string &entry,
          MTLFunctionConstantValues *constants, const std::string &what) const;

private:
  MetalContext() = default;
  id<MTLDevice> device_ = nil;
  id<MTLCommandQueue> queue_ = nil;
};

} // namespace fm::hal::mtl
