// Pipelines and bindings (MetalPipelines.h).
#include "hal/metal/MetalPipelines.h"

#include "hal/metal/MetalDevice.h"
#include "hal/metal/MetalShaders.h"

namespace fm::hal::mtl {

Expected<Pipeline> createPipeline(const MetalContext &ctx, const std::string &source,
                                  const std::string &entry, const uint32_t threads[3],
                                  uint32_t bindings, uint32_t pushBytes,
                                  const std::vector<uint32_t> &spec, const std::string &what) {
  MTLFunctionConstantValues *constants = nil;
  if (!spec.empty()) {
    constants = [[MTLFunctionConstantValues alloc] init];
    for (size_t i = 0; i < spec.size(); ++i) {
      if (i == 2) { // QAFFINE: a bool constant (shaders/common.glsl)
        const bool b = spec[i] != 0;
        [constants setConstantValue:&b type:MTLDataTypeBool atIndex:i];
      } else {
        const uint32_t u = spec[i];
        [constants setConstantValue:&u type:MTLDataTypeUInt atIndex:i];
      }
    }
  }
  auto compiled = ctx.compile(source, entry, constants, what);
  if (!compiled)
    return compiled.status();
  Pipeline p;
  p.state = compiled->state;
  p.threads = MTLSizeMake(threads[0], threads[1], threads[2]);
  p.bindings = bindings;
  p.pushBytes = pushBytes;
  p.name = entry;
  const uint64_t total = uint64_t(threads[0]) * threads[1] * threads[2];
  if (total == 0 || total > [p.state maxTotalThreadsPerThreadgroup])
    return Status::error("metal: kernel '" + entry + "' of " + what + " needs " +
                         std::to_string(total) + " threads per threadgroup; its pipeline "
                         "allows " + std::to_string([p.state maxTotalThreadsPerThreadgroup]));
  return p;
}

Expected<const Pipeline *> PipelineLibrary::get(const std::string &shader, uint32_t bindings,
                                                uint32_t pushBytes,
                                                const std::vector<uint32_t> &spec) {
  std::string key = shader;
  for (uint32_t v : spec)
    key += ":" + std::to_string(v);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = pipelines_.find(key); it != pipelines_.end())
    return static_cast<const Pipeline *>(it->second.get());
  const ShaderSource *code = nullptr;
  for (size_t i = 0; i < kNumShaders; ++i)
    if (shader == kShaders[i].name)
      code = &kShaders[i];
  if (!code)
    return Status::error("metal: no kernel '" + shader + "' in this runtime");
  auto p = createPipeline(*ctx_, code->source, code->name, code->threadgroup, bindings,
                          pushBytes, spec, "the runtime's kernel " + key);
  if (!p)
    return p.status();
  auto &slot = pipelines_[key];
  slot = std::make_unique<Pipeline>(std::move(*p));
  return static_cast<const Pipeline *>(slot.get());
}

Expected<BoundRange> bindRange(const MetalBuffer &buffer, uint64_t offset, uint64_t bytes,
                               uint32_t elemSize, const std::string &what) {
  // As on Vulkan, a range may run past the buffer's end (the rows a
  // binding may reach are bounded by the buffer); its start may not.
  (void)bytes;
  if (offset >= buffer.allocatedSize())
    return Status::error("metal: " + what + " starts at byte " + std::to_string(offset) +
                         ", outside its buffer of " + std::to_string(buffer.allocatedSize()) +
                         " bytes");
  BoundRange r;
  r.buffer = buffer.handle();
  r.offset = offset / MetalContext::kOffsetAlignment * MetalContext::kOffsetAlignment;
  if ((offset - r.offset) % elemSize != 0)
    return Status::error("metal: " + what + " at byte " + std::to_string(offset) +
                         " is not aligned to its " + std::to_string(elemSize) +
                         "-byte elements");
  r.elem = uint32_t((offset - r.offset) / elemSize);
  return r;
}

} // namespace fm::hal::mtl
