// Compute pipelines (the hand-written kernels by name and function
// constants, cached per device; the functions of a loaded executable), and
// the buffer bindings a prepared kernel sets (the Vulkan device's
// descriptor sets: here a list of (buffer, offset) per buffer index).
#pragma once

#include "fm/status.h"
#include "hal/metal/MetalContext.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fm::hal::mtl {

class MetalBuffer;

/// A compute pipeline over `bindings` device buffers ([[buffer(0)]] ..
/// [[buffer(bindings - 1)]]) and `pushBytes` of push constants (set with
/// setBytes at [[buffer(bindings)]]), run with `threads` threads per
/// threadgroup (the kernel's local_size, or the artifact's workgroup_size).
struct Pipeline {
  id<MTLComputePipelineState> state = nil;
  MTLSize threads = MTLSizeMake(1, 1, 1);
  uint32_t bindings = 0, pushBytes = 0;
  std::string name; // for messages
};

/// Compiles `source` and makes a Pipeline of its kernel `entry`; spec[i]
/// is function constant i (glslc's specialization constant i: QBITS and
/// QGROUP as uint, QAFFINE as bool, shaders/common.glsl). An error when
/// the device cannot run `threads` threads per threadgroup.
Expected<Pipeline> createPipeline(const MetalContext &ctx, const std::string &source,
                                  const std::string &entry, const uint32_t threads[3],
                                  uint32_t bindings, uint32_t pushBytes,
                                  const std::vector<uint32_t> &spec, const std::string &what);

/// The hand-written kernels (MetalShaders.h): each pipeline is compiled on
/// first use and kept for the device's life, keyed by the kernel's name
/// and its function constants.
class PipelineLibrary {
public:
  explicit PipelineLibrary(std::shared_ptr<MetalContext> ctx) : ctx_(std::move(ctx)) {}
  PipelineLibrary(const PipelineLibrary &) = delete;
  PipelineLibrary &operator=(const PipelineLibrary &) = delete;

  /// Kernel `shader` ("matmul_q") with its function constants.
  Expected<const Pipeline *> get(const std::string &shader, uint32_t bindings,
                                 uint32_t pushBytes,
                                 const std::vector<uint32_t> &spec = {});

private:
  std::shared_ptr<MetalContext> ctx_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
};

/// A buffer binding: `buffer` from byte `offset` (a multiple of
/// MetalContext::kOffsetAlignment); the data a kernel means starts `elem`
/// elements into it.
struct BoundRange {
  id<MTLBuffer> buffer = nil;
  uint64_t offset = 0;
  uint32_t elem = 0;
};

/// The binding of bytes [offset, offset + bytes) of `buffer`, read as
/// elements of `elemSize` bytes; an error (naming `what`) when it starts
/// outside the buffer or is misaligned. (Metal has no per-binding range limit
/// like Vulkan's maxStorageBufferRange: a binding reaches the buffer's end.)
Expected<BoundRange> bindRange(const MetalBuffer &buffer, uint64_t offset, uint64_t bytes,
                               uint32_t elemSize, const std::string &what);

} // namespace fm::hal::mtl
