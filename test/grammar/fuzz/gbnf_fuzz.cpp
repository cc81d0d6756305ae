// libFuzzer target: the GBNF parser, then the matcher over the input.
#include "fuzz_common.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  auto g = fm::Grammar::fromGbnf(text);
  if (g)
    exercise(*g, text);
  return 0;
}
