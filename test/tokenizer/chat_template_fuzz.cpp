// libFuzzer target: the chat template compiler and renderer. Every template
// must compile or be refused with a message, and render within small limits
// or stop with one, without a crash or a hang.
#include "fm/chat_template.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string src(reinterpret_cast<const char *>(data), size);
  fm::Expected<fm::ChatTemplate> t = fm::ChatTemplate::compile(src);
  if (!t) {
    if (t.message().empty())
      __builtin_trap();
    return 0;
  }
  fm::ChatTemplateOptions o;
  o.bosToken = "<s>";
  o.eosToken = "</s>";
  o.now = 0;
  o.maxOutputBytes = 1 << 20;
  o.maxSteps = 100'000;
  o.extraJson = R"({"tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object"}}}], "enable_thinking": false})";
  fm::Expected<std::string> out = t->render(
      {{"system", "sys"}, {"user", "hi <think>x</think>"}, {"assistant", "ok"},
       {"user", "bye"}},
      o);
  if (!out && out.message().empty())
    __builtin_trap();
  return 0;
}
