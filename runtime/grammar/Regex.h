// ECMA-262 regular expressions (the subset without backreferences and lookaround) compiled to
// code-point automata.
#pragma once

#include "fm/status.h"
#include "grammar/CharNfa.h"

#include <cstddef>
#include <string_view>

namespace fm::grammar {

enum class RegexMode {
  /// The whole text must match (`--regex`); ^ and $ at the ends are allowed and change nothing.
  FullMatch,
  /// JSON Schema's `pattern`: a match anywhere in the string unless ^ / $ anchor it.
  Search,
};

/// Compiles `pattern` (UTF-8). Errors name the offset: "at offset 3: lookahead (?= is not
/// supported". ^ and $ may appear only at the start / end of a top-level alternative. A pattern
/// whose automaton would pass `maxStates` states is refused (bounded compile time for user
/// patterns; the built-in formats pass a larger bound).
Expected<CharNfa> compileRegex(std::string_view pattern, RegexMode mode,
                               size_t maxStates = 20000);

} // namespace fm::grammar
