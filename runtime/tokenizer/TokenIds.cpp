// fm::parseTokenIds (fm/tokenizer.h): ids as fm-tokenize prints them.
#include "fm/tokenizer.h"

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace fm {

Expected<std::vector<TokenId>> parseTokenIds(std::string_view text,
                                             const std::string &what) {
  auto isSep = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',';
  };
  std::vector<TokenId> ids;
  size_t i = 0;
  while (i < text.size()) {
    if (isSep(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && !isSep(text[j]))
      ++j;
    const std::string word(text.substr(i, j - i));
    char *end = nullptr;
    errno = 0;
    const long long v = std::strtoll(word.c_str(), &end, 10);
    const bool digits = word.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || *end != '\0' || errno || v > INT32_MAX)
      return Status::error("'" + word + "' (byte " + std::to_string(i) + " of " +
                           what + ") is not a token id");
    ids.push_back(static_cast<TokenId>(v));
    i = j;
  }
  return ids;
}

} // namespace fm
