// libFuzzer target: the SPIR-V reader behind the Metal target's threadgroup
// memory check (targets/metal/ThreadgroupMemory.h), which fm-msl applies to
// .spv files it is given. Any words must be refused with a sentence or
// sized; a size is never past the 2^40 bytes the reader caps it at.
#include "targets/metal/ThreadgroupMemory.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint32_t> words(size / 4);
  if (!words.empty())
    std::memcpy(words.data(), data, words.size() * 4);
  uint64_t bytes = 0;
  std::string error;
  const bool ok = fm::msl::threadgroupBytes(words.data(), words.size(), "main", &bytes, &error);
  if (ok != error.empty())
    std::abort(); // success with an error, or failure without one
  if (ok && bytes > (uint64_t(1) << 40))
    std::abort();
  return 0;
}
