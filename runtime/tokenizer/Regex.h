// A compiled Unicode regex (PCRE2, JIT when available) for the pre-tokenizer
// and normalizer patterns of a tokenizer.json, with Oniguruma's meaning (the
// engine Hugging Face's tokenizers uses) where PCRE2's differs.
#pragma once

#include "fm/status.h"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace fm::tok {

class Regex {
public:
  /// Compiles `pattern` (tokenizer.json syntax); `where` names the field in
  /// error messages ("tokenizer.json: pre_tokenizer.pattern.Regex").
  static Expected<Regex> compile(std::string_view pattern,
                                 const std::string &where);
  /// A regex matching `literal` exactly (a Split/Replace "String" pattern).
  static Expected<Regex> literal(std::string_view literal,
                                 const std::string &where);

  /// The PCRE2 pattern that `pattern` becomes: Oniguruma's \s (which holds
  /// U+0085) and, when PCRE2's Unicode tables are older than 15.0, the
  /// letters, marks and numbers that 15.0 added to \p{L}, \p{M}, \p{N}.
  static std::string translate(std::string_view pattern);

  /// Calls f(start, end) for each match in `text` (valid UTF-8), left to
  /// right, as Oniguruma's find_iter does (an empty match right after the
  /// previous match is skipped). Fails when PCRE2 gives up (match limits).
  template <typename F> Status forEachMatch(std::string_view text, F &&f) const {
    size_t pos = 0, lastMatchEnd = static_cast<size_t>(-1);
    while (pos <= text.size()) {
      size_t s, e;
      int rc = find(text, pos, &s, &e);
      if (rc == 0)
        break;
      if (rc < 0)
        return matchError(rc, text.size());
      if (s == e && e == lastMatchEnd) {
        if (pos >= text.size())
          break;
        pos += nextCharLength(text, pos);
        continue;
      }
      f(s, e);
      pos = e;
      lastMatchEnd = e;
    }
    return Status::ok();
  }

  const std::string &source() const { return source_; }

private:
  struct Code;
  /// 1 and [*start, *end) for the first match at or after `from`; 0 when none;
  /// a negative PCRE2 error code.
  int find(std::string_view text, size_t from, size_t *start,
           size_t *end) const;
  Status matchError(int rc, size_t length) const;
  static size_t nextCharLength(std::string_view text, size_t pos);

  std::shared_ptr<const Code> code_;
  std::string source_, where_;
};

} // namespace fm::tok
