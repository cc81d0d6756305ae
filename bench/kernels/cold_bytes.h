// How many bytes of weight copies a "cold" matvec benchmark cycles through:
// at least twice the last-level cache, so that each iteration's weights
// come from DRAM as in a decode step. A fixed 160 MiB was enough on a
// 32 MiB L3, but a VM that reports a 480 MiB L3 served those copies from
// cache at 30-40 GB/s on 2 cores, above fm-stream-read's 32 GB/s.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unistd.h>

namespace fm::bench {

inline int64_t coldBytes() {
  constexpr int64_t kFloor = int64_t(160) << 20;
  int64_t llc = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
  llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  return std::max(kFloor, 2 * std::max<int64_t>(llc, 0));
}

} // namespace fm::bench
