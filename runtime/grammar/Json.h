// A small JSON document model for schemas: members in document order (generation writes
// properties in schema order) and numbers kept as their exact decimal text (bounds like 1.1
// must not pass through a double).
#pragma once

#include "fm/status.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fm::grammar {

struct JsonValue {
  enum Type { Null, Bool, Number, String, Array, Object } type = Null;
  bool boolean = false;
  std::string text; // a number's decimal text, or a string's value (UTF-8)
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;

  const JsonValue *get(std::string_view key) const;
  bool isInteger() const; // a number with no fractional part (1.0 included)
};

/// Parses JSON text; errors read "<what>: line 3, column 7: Missing a comma or '}' after an
/// object member".
Expected<JsonValue> parseJson(std::string_view text, const std::string &what);

/// A decimal number: (-1)^negative x digits x 10^exponent, digits without leading or trailing
/// zeros ("" for zero, which is never negative).
struct Decimal {
  bool negative = false;
  std::string digits;
  int64_t exponent = 0;
  static bool parse(std::string_view text, Decimal *out);
  bool isZero() const { return digits.empty(); }
  bool isInteger() const { return exponent >= 0 || digits.empty(); }
  /// The integer part's and fractional part's digit strings ("0" / "" for none).
  std::string intPart() const;
  std::string fracPart() const;
};
/// -1, 0 or 1 as a < b, a == b, a > b.
int compareDecimal(const Decimal &a, const Decimal &b);

/// JSON Schema's equality: numbers by value (1 == 1.0), objects regardless of member order.
bool jsonEqual(const JsonValue &a, const JsonValue &b);

/// "/a~1b/0": a JSON pointer token with ~ and / escaped.
std::string pointerToken(const std::string &key);

} // namespace fm::grammar
