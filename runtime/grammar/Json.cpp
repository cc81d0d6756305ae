// JSON parsing through RapidJSON's SAX reader into JsonValue, and decimal arithmetic for bounds.
#include "grammar/Json.h"

#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <algorithm>

namespace fm::grammar {

const JsonValue *JsonValue::get(std::string_view key) const {
  const JsonValue *found = nullptr;
  for (const auto &[k, v] : members)
    if (k == key)
      found = &v; // the last of duplicate keys wins, as in most parsers
  return found;
}

bool JsonValue::isInteger() const {
  Decimal d;
  return type == Number && Decimal::parse(text, &d) && d.isInteger();
}

namespace {

struct Builder : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Builder> {
  std::vector<JsonValue> stack;
  std::vector<std::string> keys;
  JsonValue root;

  bool put(JsonValue v) {
    if (stack.empty()) {
      root = std::move(v);
      return true;
    }
    JsonValue &top = stack.back();
    if (top.type == JsonValue::Array) {
      top.items.push_back(std::move(v));
    } else {
      top.members.emplace_back(std::move(keys.back()), std::move(v));
      keys.pop_back();
    }
    return true;
  }
  bool Null() { return put(JsonValue{}); }
  bool Bool(bool b) {
    JsonValue v;
    v.type = JsonValue::Bool;
    v.boolean = b;
    return put(std::move(v));
  }
  bool RawNumber(const char *s, rapidjson::SizeType n, bool) {
    JsonValue v;
    v.type = JsonValue::Number;
    v.text.assign(s, n);
    return put(std::move(v));
  }
  bool String(const char *s, rapidjson::SizeType n, bool) {
    JsonValue v;
    v.type = JsonValue::String;
    v.text.assign(s, n);
    return put(std::move(v));
  }
  static constexpr size_t kMaxDepth = 512;
  bool tooDeep = false;
  bool StartObject() {
    if (stack.size() >= kMaxDepth)
      return !(tooDeep = true);
    JsonValue v;
    v.type = JsonValue::Object;
    stack.push_back(std::move(v));
    return true;
  }
  bool Key(const char *s, rapidjson::SizeType n, bool) {
    keys.emplace_back(s, n);
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    JsonValue v = std::move(stack.back());
    stack.pop_back();
    return put(std::move(v));
  }
  bool StartArray() {
    if (stack.size() >= kMaxDepth)
      return !(tooDeep = true);
    JsonValue v;
    v.type = JsonValue::Array;
    stack.push_back(std::move(v));
    return true;
  }
  bool EndArray(rapidjson::SizeType) { return EndObject(0); }
};

} // namespace

Expected<JsonValue> parseJson(std::string_view text, const std::string &what) {
  Builder b;
  rapidjson::Reader reader;
  // NUL padding: rapidjson's UTF-8 validation takes a multi-byte sequence's continuation bytes
  // before checking them, so a lead byte at the end would read past a single terminator.
  std::string copy(text);
  copy.append(4, '\0');
  rapidjson::StringStream ss(copy.c_str());
  constexpr unsigned kFlags = rapidjson::kParseNumbersAsStringsFlag |
                              rapidjson::kParseValidateEncodingFlag |
                              rapidjson::kParseIterativeFlag;
  rapidjson::ParseResult r = reader.Parse<kFlags>(ss, b);
  if (r.IsError() || text.size() != std::string(copy.c_str()).size()) {
    size_t off = r.IsError() ? r.Offset() : std::string(copy.c_str()).size();
    size_t line = 1, col = 1;
    for (size_t k = 0; k < off && k < copy.size(); ++k) {
      if (copy[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string msg = b.tooDeep     ? "nesting deeper than 512 levels"
                      : r.IsError() ? rapidjson::GetParseError_En(r.Code())
                                    : "a NUL byte in the text";
    return Status::error(what + ": line " + std::to_string(line) + ", column " +
                         std::to_string(col) + ": " + msg);
  }
  return std::move(b.root);
}

bool Decimal::parse(std::string_view t, Decimal *out) {
  Decimal d;
  size_t i = 0;
  if (i < t.size() && t[i] == '-') {
    d.negative = true;
    ++i;
  }
  std::string digits;
  int64_t exp = 0;
  bool any = false;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
    digits += t[i++];
    any = true;
  }
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      digits += t[i++];
      --exp;
      any = true;
    }
  }
  if (!any)
    return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    bool neg = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-'))
      neg = t[i++] == '-';
    int64_t e = 0;
    bool digitsSeen = false;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      e = std::min<int64_t>(e * 10 + (t[i++] - '0'), int64_t(1) << 40);
      digitsSeen = true;
    }
    if (!digitsSeen)
      return false;
    exp += neg ? -e : e;
  }
  if (i != t.size())
    return false;
  size_t lead = digits.find_first_not_of('0');
  if (lead == std::string::npos) {
    *out = Decimal{};
    return true;
  }
  digits = digits.substr(lead);
  while (!digits.empty() && digits.back() == '0') {
    digits.pop_back();
    ++exp;
  }
  d.digits = digits;
  d.exponent = exp;
  *out = d;
  return true;
}

std::string Decimal::intPart() const {
  if (digits.empty())
    return "0";
  int64_t n = int64_t(digits.size()) + exponent; // digits before the point
  if (n <= 0)
    return "0";
  if (exponent >= 0)
    return digits + std::string(size_t(exponent), '0');
  return digits.substr(0, size_t(n));
}

std::string Decimal::fracPart() const {
  if (digits.empty() || exponent >= 0)
    return "";
  int64_t n = int64_t(digits.size()) + exponent;
  if (n >= 0)
    return digits.substr(size_t(n));
  return std::string(size_t(-n), '0') + digits;
}

int compareDecimal(const Decimal &a, const Decimal &b) {
  if (a.isZero() && b.isZero())
    return 0;
  bool an = !a.isZero() && a.negative, bn = !b.isZero() && b.negative;
  if (an != bn)
    return an ? -1 : 1;
  // Compare magnitudes: the position of the leading digit, then digit by digit.
  int mag = 0;
  if (a.isZero())
    mag = -1;
  else if (b.isZero())
    mag = 1;
  else {
    int64_t la = int64_t(a.digits.size()) + a.exponent, lb = int64_t(b.digits.size()) + b.exponent;
    if (la != lb) {
      mag = la < lb ? -1 : 1;
    } else {
      size_t n = std::max(a.digits.size(), b.digits.size());
      for (size_t k = 0; k < n && mag == 0; ++k) {
        char x = k < a.digits.size() ? a.digits[k] : '0';
        char y = k < b.digits.size() ? b.digits[k] : '0';
        if (x != y)
          mag = x < y ? -1 : 1;
      }
    }
  }
  return an ? -mag : mag;
}

bool jsonEqual(const JsonValue &a, const JsonValue &b) {
  if (a.type != b.type)
    return false;
  switch (a.type) {
  case JsonValue::Null:
    return true;
  case JsonValue::Bool:
    return a.boolean == b.boolean;
  case JsonValue::Number: {
    Decimal x, y;
    return Decimal::parse(a.text, &x) && Decimal::parse(b.text, &y) && compareDecimal(x, y) == 0;
  }
  case JsonValue::String:
    return a.text == b.text;
  case JsonValue::Array:
    if (a.items.size() != b.items.size())
      return false;
    for (size_t i = 0; i < a.items.size(); ++i)
      if (!jsonEqual(a.items[i], b.items[i]))
        return false;
    return true;
  case JsonValue::Object:
    if (a.members.size() != b.members.size())
      return false;
    for (const auto &[k, v] : a.members) {
      const JsonValue *w = b.get(k);
      if (!w || !jsonEqual(v, *w))
        return false;
    }
    return true;
  }
  return false;
}

std::string pointerToken(const std::string &key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

} // namespace fm::grammar
