// JSON Schema `format` values enforced as regular languages over the decoded string.
#pragma once

#include <string>

namespace fm::grammar {

/// A full-match regex for `format` (date, time, date-time, uuid), or "" when the format is not
/// supported. Check mode follows RFC 3339 fully (lower-case t/z, leap seconds at 23:59:60 UTC
/// under any offset); Generate mode admits a canonical subset (upper case, no leap seconds).
std::string formatRegex(const std::string &format, bool check);

} // namespace fm::grammar
