// Bounds on JSON numbers as regular languages: the decimal spellings (no exponent) of the
// numbers at or above / below a bound, digit by digit, so minimum 1.1 needs no float.
#pragma once

#include "grammar/Json.h"

#include <string>

namespace fm::grammar {

/// A full-match regex for the JSON numbers without exponent that are >= bound (> when
/// `exclusive`).
std::string atLeastRegex(const Decimal &bound, bool exclusive);
/// ... that are <= bound (< when `exclusive`).
std::string atMostRegex(const Decimal &bound, bool exclusive);
/// A full-match regex for exactly the spellings without exponent of the number `value`
/// (1 -> 1, 1.0, 1.00, ...; 0 -> 0, -0, 0.0, ...).
std::string numberEqualRegex(const Decimal &value);

} // namespace fm::grammar
