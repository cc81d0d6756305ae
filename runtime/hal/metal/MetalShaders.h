// The Metal device's hand-written kernels: the Vulkan device's GLSL
// (runtime/hal/vulkan/shaders) compiled by glslc and translated to MSL 2.3
// at build time (Metal.cmake), embedded as source with the threadgroup
// size of each (the shader's local_size).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fm::hal::mtl {

struct ShaderSource {
  const char *name;   // "matmul_q": the MSL kernel function's name too
  const char *source; // one MSL translation unit
  uint32_t threadgroup[3];
};

extern const ShaderSource kShaders[];
extern const size_t kNumShaders;

} // namespace fm::hal::mtl
