// Regex text for numeric bounds. M below is a magnitude: (0|[1-9]\d*)(\.\d+)?.
#include "grammar/NumberRange.h"

#include <vector>

namespace fm::grammar {

namespace {

const char *kAnyMagnitude = "(?:0|[1-9]\\d*)(?:\\.\\d+)?";
const char *kNothing = "[]";

std::string join(const std::vector<std::string> &alts) {
  if (alts.empty())
    return kNothing;
  std::string out = "(?:";
  for (size_t i = 0; i < alts.size(); ++i)
    out += (i ? "|" : "") + alts[i];
  return out + ")";
}

std::string digitRange(int lo, int hi) {
  if (lo == hi)
    return std::string(1, char('0' + lo));
  return "[" + std::string(1, char('0' + lo)) + "-" + std::string(1, char('0' + hi)) + "]";
}

std::string digitsExactly(size_t n) { return n ? "\\d{" + std::to_string(n) + "}" : ""; }

// Integer spellings (no leading zeros) greater than I.
std::vector<std::string> intGreater(const std::string &I) {
  if (I == "0")
    return {"[1-9]\\d*"};
  size_t n = I.size();
  std::vector<std::string> alts{"[1-9]\\d{" + std::to_string(n) + ",}"};
  for (size_t i = 0; i < n; ++i) {
    int d = I[i] - '0';
    if (d < 9)
      alts.push_back(I.substr(0, i) + digitRange(d + 1, 9) + digitsExactly(n - i - 1));
  }
  return alts;
}

// Integer spellings less than I.
std::vector<std::string> intLess(const std::string &I) {
  if (I == "0")
    return {};
  size_t n = I.size();
  std::vector<std::string> alts{"0"};
  if (n >= 2)
    alts.push_back("[1-9]\\d{0," + std::to_string(n - 2) + "}");
  for (size_t i = 0; i < n; ++i) {
    int d = I[i] - '0';
    int lo = i == 0 ? 1 : 0;
    if (d - 1 >= lo)
      alts.push_back(I.substr(0, i) + digitRange(lo, d - 1) + digitsExactly(n - i - 1));
  }
  return alts;
}

// The optional fraction (with its '.') after an integer part equal to the bound's, such that
// the fraction compares to F (no trailing zeros) as asked.
std::string fraction(const std::string &F, bool greater, bool orEqual) {
  std::vector<std::string> alts;
  size_t n = F.size();
  if (greater) {
    if (F.empty())
      return orEqual ? "(?:\\.\\d+)?" : "\\.\\d*[1-9]\\d*";
    for (size_t i = 0; i < n; ++i) {
      int d = F[i] - '0';
      if (d < 9)
        alts.push_back(F.substr(0, i) + digitRange(d + 1, 9) + "\\d*");
    }
    alts.push_back(orEqual ? F + "\\d*" : F + "\\d*[1-9]\\d*");
    return "\\." + join(alts);
  }
  if (F.empty())
    return orEqual ? "(?:\\.0+)?" : kNothing;
  for (size_t i = 0; i < n; ++i) {
    int d = F[i] - '0';
    if (d > 0)
      alts.push_back(F.substr(0, i) + digitRange(0, d - 1) + "\\d*");
  }
  for (size_t k = 1; k < n; ++k)
    alts.push_back(F.substr(0, k));
  if (orEqual)
    alts.push_back(F + "0*");
  return "(?:\\." + join(alts) + ")?";
}

// Magnitudes compared to the magnitude of b.
std::string magnitude(const Decimal &b, bool greater, bool orEqual) {
  std::string I = b.intPart(), F = b.fracPart();
  std::vector<std::string> alts;
  for (const std::string &a : greater ? intGreater(I) : intLess(I))
    alts.push_back(a + "(?:\\.\\d+)?");
  std::string frac = fraction(F, greater, orEqual);
  if (frac != kNothing)
    alts.push_back(I + frac);
  return join(alts);
}

} // namespace

std::string atLeastRegex(const Decimal &b, bool exclusive) {
  bool orEqual = !exclusive;
  if (b.isZero() || !b.negative) {
    std::string pos = magnitude(b, true, orEqual);
    if (b.isZero() && orEqual)
      return "(?:" + pos + "|-0(?:\\.0+)?)";
    return pos;
  }
  // b < 0: every non-negative number, and -M with M <= |b| (< when exclusive).
  Decimal m = b;
  m.negative = false;
  return std::string("(?:") + kAnyMagnitude + "|-" + magnitude(m, false, orEqual) + ")";
}

std::string atMostRegex(const Decimal &b, bool exclusive) {
  bool orEqual = !exclusive;
  if (b.isZero()) {
    if (orEqual)
      return std::string("(?:0(?:\\.0+)?|-") + kAnyMagnitude + ")";
    Decimal zero;
    return "-" + magnitude(zero, true, false);
  }
  if (!b.negative)
    return "(?:" + magnitude(b, false, orEqual) + "|-" + kAnyMagnitude + ")";
  Decimal m = b;
  m.negative = false;
  return "-" + magnitude(m, true, orEqual);
}

std::string numberEqualRegex(const Decimal &v) {
  if (v.isZero())
    return "-?0(?:\\.0+)?";
  std::string I = v.intPart(), F = v.fracPart();
  std::string out = v.negative ? "-" : "";
  out += I;
  out += F.empty() ? "(?:\\.0+)?" : "\\." + F + "0*";
  return out;
}

} // namespace fm::grammar
