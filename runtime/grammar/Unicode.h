// Code-point sets and their byte-level spellings: UTF-8 sequences of a range set, digit-wise
// splits of a number range (hex escapes, UTF-16 surrogate pairs), UTF-8 encode and decode.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fm::grammar {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

/// A set of Unicode scalar values as sorted, disjoint, non-adjacent inclusive ranges.
/// Surrogates (U+D800..U+DFFF) are never members: they are not characters in UTF-8 text.
class CpSet {
public:
  using Range = std::pair<uint32_t, uint32_t>;
  CpSet() = default;
  static CpSet of(uint32_t cp) { return range(cp, cp); }
  static CpSet range(uint32_t lo, uint32_t hi);
  static CpSet all() { return range(0, kMaxCodePoint); }

  void add(uint32_t lo, uint32_t hi);
  void add(const CpSet &other);
  CpSet complement() const;
  CpSet intersect(const CpSet &other) const;
  CpSet minus(const CpSet &other) const { return intersect(other.complement()); }
  bool contains(uint32_t cp) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<Range> &ranges() const { return ranges_; }
  bool operator==(const CpSet &o) const { return ranges_ == o.ranges_; }
  bool operator<(const CpSet &o) const { return ranges_ < o.ranges_; }

private:
  void normalize();
  std::vector<Range> ranges_;
};

/// One byte range per position: a UTF-8 sequence family such as [E1][88][B4-BF].
using ByteRangeSeq = std::vector<std::pair<uint8_t, uint8_t>>;

/// The UTF-8 spellings of every code point in `set`, as sequences of byte ranges whose product
/// is exactly the set (the utf8-ranges construction of RE2 and Rust's regex-syntax).
std::vector<ByteRangeSeq> utf8Sequences(const CpSet &set);

/// Splits [lo, hi] over numbers of `digits` digits in `base` into families of per-digit ranges
/// whose products are exactly the range: [0x12, 0x3F] base 16 -> {[1][2-F], [2-3][0-F]}.
std::vector<std::vector<std::pair<uint32_t, uint32_t>>>
digitRanges(uint32_t lo, uint32_t hi, uint32_t base, int digits);

/// Appends the UTF-8 bytes of `cp`.
void appendUtf8(std::string &out, uint32_t cp);
/// Decodes one UTF-8 character at text[*i]; returns false (and leaves *i) on invalid bytes.
bool decodeUtf8(const std::string &text, size_t *i, uint32_t *cp);

} // namespace fm::grammar
