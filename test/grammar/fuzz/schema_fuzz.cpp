// libFuzzer target: the JSON Schema compiler (both modes), then the matcher over the input.
#include "fuzz_common.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  for (fm::GrammarMode mode : {fm::GrammarMode::Generate, fm::GrammarMode::Check}) {
    auto g = fm::Grammar::fromJsonSchema(text, mode);
    if (g)
      exercise(*g, text);
  }
  return 0;
}
