// RFC 3339 dates and times, and RFC 4122 UUIDs, as regex text.
#include "grammar/Formats.h"

#include <cstdio>

namespace fm::grammar {

namespace {

// full-date with the days each month has; 02-29 only in leap years (divisible by 4, and by
// 400 when it ends a century).
const char *kDate = "(?:\\d{4}-(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])"
                    "|\\d{4}-(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)"
                    "|\\d{4}-02-(?:0[1-9]|1\\d|2[0-8])"
                    "|(?:\\d{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
                    "-02-29)";

const char *kHour = "(?:[01]\\d|2[0-3])";
const char *kFrac = "(?:\\.\\d+)?";

std::string twoDigits(int v) {
  char b[3];
  std::snprintf(b, sizeof b, "%02d", v);
  return b;
}

std::string hhmm(int minutes) { return twoDigits(minutes / 60) + ":" + twoDigits(minutes % 60); }

// Leap seconds: hh:mm:60 is valid exactly when hh:mm minus the offset is 23:59 UTC. Grouped
// by hour, then minute, so the automaton stays a narrow tree.
std::string leapSeconds() {
  std::string out = "(?:";
  for (int h = 0; h < 24; ++h) {
    out += (h ? "|" : "") + twoDigits(h) + ":(?:";
    for (int m = 0; m < 60; ++m) {
      int local = h * 60 + m;
      int plus = (local + 1) % 1440;           // local - plus  == 23:59
      int minus = (1439 - local + 1440) % 1440; // local + minus == 23:59
      out += (m ? "|" : "") + twoDigits(m) + ":60" + kFrac + "(?:\\+" + hhmm(plus) + "|-" +
             hhmm(minus) + (local == 1439 ? "|[Zz]" : "") + ")";
    }
    out += ")";
  }
  return out + ")";
}

std::string time(bool check) {
  std::string offset = check ? std::string("(?:[Zz]|[+-]") + kHour + ":[0-5]\\d)"
                             : std::string("(?:Z|[+-]") + kHour + ":[0-5]\\d)";
  std::string normal = std::string(kHour) + ":[0-5]\\d:[0-5]\\d" + kFrac + offset;
  if (!check)
    return normal;
  return "(?:" + normal + "|" + leapSeconds() + ")";
}

} // namespace

std::string formatRegex(const std::string &format, bool check) {
  if (format == "date")
    return kDate;
  if (format == "time")
    return time(check);
  if (format == "date-time")
    return std::string(kDate) + (check ? "[Tt]" : "T") + time(check);
  if (format == "uuid") {
    std::string h = check ? "[0-9a-fA-F]" : "[0-9a-f]";
    return h + "{8}-" + h + "{4}-" + h + "{4}-" + h + "{4}-" + h + "{12}";
  }
  return "";
}

} // namespace fm::grammar
