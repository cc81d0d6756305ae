// libFuzzer target: the tokenizer.json reader. Every input must load or be
// refused with a message; what loads must encode, decode and stream-decode
// without a crash (ASan watches memory).
#include "fm/tokenizer.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string json(reinterpret_cast<const char *>(data), size);
  fm::Expected<fm::Tokenizer> t = fm::Tokenizer::fromJson(json);
  if (!t) {
    if (t.message().empty())
      __builtin_trap(); // a refusal must say why
    return 0;
  }
  const std::string texts[] = {"Hello world, it's 2024! \xF0\x9F\x98\x80\n\n  x",
                               json.substr(0, 64), "\xFF\xC3(", ""};
  for (const std::string &text : texts) {
    for (bool special : {false, true}) {
      fm::Expected<std::vector<fm::TokenId>> ids = t->encode(text, special);
      if (!ids)
        continue;
      for (fm::TokenId id : *ids)
        if (!t->hasId(id) && !special)
          __builtin_trap(); // encode gives ids of the vocabulary only
      fm::Expected<std::string> back = t->decode(*ids);
      fm::StreamDecoder s(*t);
      for (fm::TokenId id : *ids)
        (void)s.push(id);
      (void)s.finish();
      (void)back;
    }
  }
  for (fm::TokenId id = 0; id < 64 && static_cast<size_t>(id) < t->vocabSize(); ++id)
    (void)t->tokenBytes(id);
  (void)t->decode({0, 1, 2, -1, 1 << 30});
  return 0;
}
