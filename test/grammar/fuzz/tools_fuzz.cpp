// libFuzzer target: the tools-list reader (fm::parseTools), the call schema it writes, and a few
// guided steps over the result (GuidedDecoder::process / accept on flat logits).
#include "fuzz_common.h"

#include "fm/guided.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  auto tools = fm::parseTools(text, "tools.json");
  if (!tools)
    return 0;
  auto g = fm::Grammar::fromJsonSchema(tools->callSchema);
  if (!g) {
    (void)fm::toolSchemaMessage(*tools, "tools.json", g.message());
    return 0;
  }
  exercise(*g, text);
  fm::Vocabulary vocab;
  vocab.tokens = {"", "{\"", "name", "\":", "\"", ",\"", "arguments", "{", "}", "a", "1", ":", ","};
  vocab.eos = {0};
  auto masker = fm::TokenMasker::create(*g, vocab);
  if (!masker)
    return 0;
  fm::GuidedDecoder dec(*masker);
  std::vector<float> logits(vocab.tokens.size());
  for (int step = 0; step < 16 && !dec.finished(); ++step) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    auto s = dec.process(logits.data(), int64_t(logits.size()));
    if (!s || s->stop)
      break;
    int32_t pick = s->forced;
    for (size_t t = 0; pick < 0 && t < logits.size(); ++t)
      if (logits[t] == 0.0f)
        pick = int32_t(t);
    if (pick < 0 || !dec.accept(pick))
      __builtin_trap(); // an unmasked token the decoder refuses
  }
  return 0;
}
