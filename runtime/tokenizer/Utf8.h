// UTF-8 for the tokenizer: sequence lengths, code point decoding, and the
// replacement of invalid input by U+FFFD the way Rust's from_utf8_lossy and
// WHATWG's decoder do it (one U+FFFD per maximal invalid subpart).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fm::tok {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

/// What the bytes at s[0..n) start with.
struct Utf8Scan {
  /// Bytes of the complete valid character (1..4), or 0 when there is none.
  unsigned length;
  /// When length == 0: the bytes that form a valid but unfinished prefix (the
  /// rest is past n), or 0 when the sequence is invalid.
  unsigned incomplete;
  /// When length == 0 and incomplete == 0: bytes to replace by one U+FFFD
  /// (the maximal subpart, >= 1).
  unsigned invalid;
};
Utf8Scan scanUtf8(const uint8_t *s, size_t n);

bool isValidUtf8(std::string_view text);

/// `text` with every maximal invalid subpart replaced by U+FFFD; valid text
/// comes back unchanged.
std::string sanitizeUtf8(std::string_view text);

/// The code point at text[i] (valid UTF-8 assumed); advances i past it.
inline uint32_t decodeUtf8(std::string_view text, size_t &i) {
  const auto *s = reinterpret_cast<const uint8_t *>(text.data());
  uint32_t c = s[i];
  if (c < 0x80) {
    i += 1;
    return c;
  }
  if (c < 0xE0) {
    c = ((c & 0x1F) << 6) | (s[i + 1] & 0x3F);
    i += 2;
    return c;
  }
  if (c < 0xF0) {
    c = ((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
    i += 3;
    return c;
  }
  c = ((c & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) |
      ((s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
  i += 4;
  return c;
}

/// Bytes of the UTF-8 character whose first byte is `lead` (valid UTF-8).
inline unsigned utf8Length(uint8_t lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

/// Appends the UTF-8 bytes of `cp` (inline: the chat template lexer uses it too, without
/// linking the tokenizer).
inline void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// Unicode White_Space (what Rust's char::is_whitespace and Oniguruma's \s
/// test).
inline bool isUnicodeWhiteSpace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

} // namespace fm::tok
