// The threadgroup memory a SPIR-V compute entry point needs once translated
// to MSL, from the module's Workgroup variables, so that a kernel over
// Metal's limit is refused when the artifact is built rather than when a
// Mac first creates its pipeline (no Metal compiler runs here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fm::msl {

/// Metal's maxTotalThreadgroupMemoryLength on the GPUs MSL 2.3 targets
/// (Apple4 and later, and every Mac family): 32 KiB. (The A9/A10 GPUs of
/// the Apple3 family, which iOS 14 still runs on, have 16 KiB.)
constexpr uint64_t kMetalThreadgroupBytes = 32768;

/// Bytes of the Workgroup variables that entry point `entry` (GLCompute)
/// uses: those referenced by the functions reachable from it, each counted
/// once, laid out as MSL lays out the types SPIRV-Cross declares (3-vectors
/// padded to 4, struct members at their alignment). Array lengths must be
/// constants (a specialization constant counts at its default). False with
/// `error` set on a malformed module or an unsized type.
bool threadgroupBytes(const uint32_t *words, size_t count, const std::string &entry,
                      uint64_t *bytes, std::string *error);

} // namespace fm::msl
