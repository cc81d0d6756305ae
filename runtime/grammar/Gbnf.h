// llama.cpp's GBNF grammar syntax, parsed into the byte-level grammar.
#pragma once

#include "fm/status.h"
#include "grammar/Cfg.h"

#include <string_view>

namespace fm::grammar {

/// Parses GBNF text (rules `name ::= alternatives`, literals, [classes], `.`, groups, * + ?
/// {m,n}, # comments; the start rule is `root`). Errors carry line:column.
Expected<Cfg> parseGbnf(std::string_view text);

} // namespace fm::grammar
