// JSON Schema (draft 2020-12 subset) to grammar rules.
#pragma once

#include "fm/grammar.h"
#include "grammar/Cfg.h"

#include <string_view>

namespace fm::grammar {

/// Compiles a schema document. Keywords: type (and unions), properties, required,
/// additionalProperties, items, prefixItems, minItems, maxItems, enum, const, anyOf, oneOf (as
/// anyOf), allOf, $ref/$defs (also definitions; recursion allowed), minLength, maxLength,
/// pattern, format (date, time, date-time, uuid), minimum, maximum, exclusiveMinimum,
/// exclusiveMaximum; annotations (title, description, $comment, default, examples, ...) are
/// ignored. Anything else is an error naming the keyword and its JSON pointer.
Expected<Cfg> compileJsonSchema(std::string_view text, GrammarMode mode);

} // namespace fm::grammar
