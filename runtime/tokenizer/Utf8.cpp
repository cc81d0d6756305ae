// UTF-8 scanning and lossy repair (Unicode 15.0 §3.9, "U+FFFD substitution of
// maximal subparts", as Rust's from_utf8_lossy and WHATWG implement it).
#include "tokenizer/Utf8.h"

namespace fm::tok {

Utf8Scan scanUtf8(const uint8_t *s, size_t n) {
  uint8_t c = s[0];
  if (c < 0x80)
    return {1, 0, 0};
  unsigned need;
  uint8_t lo = 0x80, hi = 0xBF; // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0)
      lo = 0xA0;
    if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0)
      lo = 0x90;
    if (c == 0xF4)
      hi = 0x8F;
  } else {
    return {0, 0, 1};
  }
  for (unsigned k = 1; k <= need; ++k) {
    if (k >= n)
      return {0, k, 0};
    uint8_t b = s[k];
    uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h)
      return {0, 0, k};
  }
  return {need + 1, 0, 0};
}

bool isValidUtf8(std::string_view text) {
  const auto *s = reinterpret_cast<const uint8_t *>(text.data());
  size_t n = text.size(), i = 0;
  while (i < n) {
    if (i + 8 <= n) {
      // Eight bytes at a time: skip to the first non-ASCII byte, if any (a
      // byte-level vocabulary is ASCII mixed with U+0100..U+0143).
      uint64_t w;
      __builtin_memcpy(&w, s + i, 8);
      uint64_t high = w & 0x8080808080808080ull;
      if (!high) {
        i += 8;
        continue;
      }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
      i += static_cast<size_t>(__builtin_clzll(high)) >> 3;
#else
      i += static_cast<size_t>(__builtin_ctzll(high)) >> 3;
#endif
    } else if (s[i] < 0x80) {
      ++i;
      continue;
    }
    // s[i] >= 0x80: two-byte characters inline, the rest by scanUtf8.
    if (s[i] >= 0xC2 && s[i] <= 0xDF && i + 1 < n && (s[i + 1] & 0xC0) == 0x80) {
      i += 2;
      continue;
    }
    Utf8Scan r = scanUtf8(s + i, n - i);
    if (!r.length)
      return false;
    i += r.length;
  }
  return true;
}

std::string sanitizeUtf8(std::string_view text) {
  if (isValidUtf8(text))
    return std::string(text);
  const auto *s = reinterpret_cast<const uint8_t *>(text.data());
  size_t n = text.size(), i = 0;
  std::string out;
  out.reserve(n + 16);
  while (i < n) {
    Utf8Scan r = scanUtf8(s + i, n - i);
    if (r.length) {
      out.append(text.data() + i, r.length);
      i += r.length;
    } else {
      out.append(kReplacementChar);
      i += r.incomplete ? r.incomplete : r.invalid;
    }
  }
  return out;
}

} // namespace fm::tok
