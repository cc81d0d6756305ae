// SPIR-V compute entry points to Metal Shading Language through the
// SPIRV-Cross C API (the translator MoltenVK and IREE ship). Plain C++17 on
// SPIR-V words: nothing of MLIR in its interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fm::msl {

enum class Platform { MacOS, IOS };

/// "macos" / "ios".
const char *platformName(Platform p);

struct Function {
  std::string source; // a complete MSL 2.3 translation unit
  std::string entry;  // the kernel function's name in it
  uint32_t workgroup[3] = {1, 1, 1}; // threads per threadgroup (LocalSize)
  uint32_t bindings = 0; // storage buffers: [[buffer(0)]] .. [[buffer(bindings - 1)]]
  uint64_t threadgroupBytes = 0; // threadgroup memory (ThreadgroupMemory.h)
};

/// translate()'s `bindings` that means: one more than the highest binding
/// of the entry point's storage buffers (as reflection finds them).
constexpr uint32_t kReflectBindings = ~0u;

/// Translates entry point `entry` of a GLCompute SPIR-V module. The storage
/// buffers at (set 0, binding i), i < `bindings`, become [[buffer(i)]] and
/// the push-constant block [[buffer(bindings)]]: the interface the Metal
/// device binds (no decoration order or spirv-cross default is relied on).
/// `rename` (optional) names the MSL kernel. A kernel needing more
/// threadgroup memory than Metal's kMetalThreadgroupBytes is an error (Metal
/// would refuse its pipeline). False with `error` set on failure.
bool translate(const uint32_t *words, size_t count, const std::string &entry,
               uint32_t bindings, Platform platform, Function *out, std::string *error,
               const std::string &rename = "");

} // namespace fm::msl
