// Wall time in milliseconds, for the runtime's timings of a generation
// (Session::generateText, fm::generateSpeculative).
#pragma once

#include <chrono>

namespace fm {

/// Milliseconds of the steady clock since `t0`.
inline double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
      .count();
}

} // namespace fm
