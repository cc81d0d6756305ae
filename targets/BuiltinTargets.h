// Registers every target built into this fmc (cpu, vulkan, and metal where
// SPIRV-Cross was found).
#pragma once

namespace fm::target {

/// Idempotent.
void registerBuiltinTargets();

} // namespace fm::target
