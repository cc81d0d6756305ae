// Registers every target built into this fmc (cpu; the GPU targets add
// themselves here).
#pragma once

namespace fm::target {

/// Idempotent.
void registerBuiltinTargets();

} // namespace fm::target
