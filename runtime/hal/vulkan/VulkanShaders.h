// The Vulkan device's hand-written kernels (shaders/*.comp), compiled to
// SPIR-V by glslc at build time and embedded (cmake/EmbedSpirv.cmake).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fm::hal::vk {

struct ShaderCode {
  const char *name; // "matmul_q": the source and its variant
  const uint32_t *words;
  size_t count; // words
};

extern const ShaderCode kShaders[];
extern const size_t kNumShaders;

} // namespace fm::hal::vk
