// Renders a parsed chat template with Jinja2's semantics (scoping, loop
// variables, filters, tests, string and dict methods) and transformers'
// globals (raise_exception, strftime_now, tojson).
#pragma once

#include "chat/Template.h"

#include <cstdint>
#include <ctime>
#include <string>

namespace fm::chat {

struct RenderLimits {
  size_t maxOutputBytes = 64u << 20;
  uint64_t maxSteps = 5'000'000;  // statements and loop iterations
  int maxDepth = 256;             // macro calls and nesting
};

/// Renders `nodes` with the top-level variables `globals` (a Dict value).
/// `now` feeds strftime_now. Throws TemplateError.
std::string render(const NodeList &nodes, const Value &globals,
                   std::time_t now, const RenderLimits &limits);

} // namespace fm::chat
