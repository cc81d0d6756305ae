// Test-only: a 40-token vocabulary (the executor tests' TinyModel width) whose tokens spell
// small JSON objects in several ways (single bytes, multi-byte pieces, a token that spans a
// key and its colon), with an end-of-sequence id and a special token without bytes.
#pragma once

#include "fm/grammar.h"

#include <cmath>
#include <regex>
#include <string>

namespace fm::test {

inline Vocabulary toyVocabulary() {
  Vocabulary v;
  v.tokens = {"",     "{",  "}",  "\"", ":",     ",",  "a",    "b",  "x",    "y",
              "yy",   "0",  "1",  "2",  "3",     "4",  "5",    "6",  "7",    "8",
              "9",    "{\"", "\":", "\"a\":", ",\"", "\"}", " ",    "z",  "[",    "]",
              "12",   "99", "\"b\":\"", "name", "arguments", "\",\"", "x\"", "\n", "", "ab"};
  v.eos = {0};
  return v;
}
constexpr int32_t kToyEos = 0;

/// Objects {"a": 0..99, "b": "x" | "yy"}; generation writes them without whitespace.
inline const char *toySchema() {
  return R"({"type": "object",
    "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 99},
                   "b": {"enum": ["x", "yy"]}},
    "required": ["a", "b"]})";
}

/// The plain reference of toySchema()'s generated form.
inline bool toyComplete(const std::string &text) {
  static const std::regex re(R"re(\{"a":(0|[1-9][0-9]?),"b":"(x|yy)"\})re");
  return std::regex_match(text, re);
}

} // namespace fm::test
