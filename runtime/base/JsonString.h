// A string as a JSON string literal, escaped as Python's json.dumps(ensure_ascii=False) writes
// it (the chat template's tojson must match it byte for byte; the command descriptions use it
// too). Header-only: libraries that do not link fm_base use it as well.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace fm::rt {

/// Appends `s` to `out` in double quotes: '"', '\\' and the control characters escaped (\n,
/// \r, \t, \b, \f short, the others as \u00XX); every other byte as it is.
inline void appendJsonString(std::string &out, std::string_view s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out.push_back(static_cast<char>(c));
      }
    }
  }
  out.push_back('"');
}

} // namespace fm::rt
