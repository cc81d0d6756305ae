// libFuzzer target: the regex parser (the first line is the pattern, the rest the text).
#include "fuzz_common.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string all(reinterpret_cast<const char *>(data), size);
  size_t nl = all.find('\n');
  std::string pattern = all.substr(0, nl), text = nl == std::string::npos ? "" : all.substr(nl + 1);
  auto g = fm::Grammar::fromRegex(pattern);
  if (g)
    exercise(*g, text);
  std::string schema = "{\"pattern\":\"";
  for (char c : pattern)
    schema += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  schema += "\"}";
  auto s = fm::Grammar::fromJsonSchema(schema, fm::GrammarMode::Check);
  if (s)
    exercise(*s, "\"" + text + "\"");
  return 0;
}
