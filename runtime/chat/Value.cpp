// Python's printing, truthiness, equality and ordering, and json.dumps, for
// chat template values.
#include "chat/Value.h"

#include "base/JsonString.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace fm::chat {

Value Value::makeDict() {
  Value v = make(Kind::Dict);
  v.dict = std::make_shared<Dict>();
  return v;
}

Value Value::makeNamespace() {
  Value v = make(Kind::Namespace);
  v.dict = std::make_shared<Dict>();
  return v;
}

bool Value::truthy() const {
  switch (kind) {
  case Kind::Undefined:
  case Kind::None:
    return false;
  case Kind::Bool:
    return b;
  case Kind::Int:
    return i != 0;
  case Kind::Float:
    return f != 0;
  case Kind::String:
    return !s.empty();
  case Kind::List:
    return !list->empty();
  case Kind::Dict:
    return !dict->items.empty();
  case Kind::Namespace:
  case Kind::Callable:
    return true;
  }
  return false;
}

const char *Value::typeName() const {
  switch (kind) {
  case Kind::Undefined:
    return "Undefined";
  case Kind::None:
    return "NoneType";
  case Kind::Bool:
    return "bool";
  case Kind::Int:
    return "int";
  case Kind::Float:
    return "float";
  case Kind::String:
    return "str";
  case Kind::List:
    return "list";
  case Kind::Dict:
    return "dict";
  case Kind::Namespace:
    return "Namespace";
  case Kind::Callable:
    return "function";
  }
  return "?";
}

std::string floatRepr(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d < 0 ? "-inf" : "inf";
  if (d == 0)
    return std::signbit(d) ? "-0.0" : "0.0";
  // The shortest digits that round-trip, then Python's layout: scientific
  // when the exponent is < -4 or >= 16, else positional with ".0" if whole.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  bool negative = sci[0] == '-';
  if (negative)
    sci.erase(0, 1);
  size_t e = sci.find('e');
  int exponent = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (size_t k = 0; k < e; ++k)
    if (sci[k] != '.')
      digits.push_back(sci[k]);
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1)
      out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    return out + eb;
  }
  if (exponent < 0) {
    out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
    out += digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
  }
  return out;
}

namespace {

std::string stringRepr(const std::string &s) {
  // Python: single quotes unless the text has ' and no ".
  bool hasSingle = s.find('\'') != std::string::npos;
  bool hasDouble = s.find('"') != std::string::npos;
  char q = hasSingle && !hasDouble ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == static_cast<unsigned char>(q))
      out += std::string("\\") + q;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else
      out.push_back(static_cast<char>(c));
  }
  out.push_back(q);
  return out;
}

} // namespace

std::string Value::str() const {
  switch (kind) {
  case Kind::Undefined:
    return "";
  case Kind::None:
    return "None";
  case Kind::Bool:
    return b ? "True" : "False";
  case Kind::Int:
    return std::to_string(i);
  case Kind::Float:
    return floatRepr(f);
  case Kind::String:
    return s;
  default:
    return repr();
  }
}

std::string Value::repr() const {
  switch (kind) {
  case Kind::String:
    return stringRepr(s);
  case Kind::List: {
    std::string out = tuple ? "(" : "[";
    for (size_t k = 0; k < list->size(); ++k)
      out += (k ? ", " : "") + (*list)[k].repr();
    if (tuple && list->size() == 1)
      out += ",";
    return out + (tuple ? ")" : "]");
  }
  case Kind::Dict: {
    std::string out = "{";
    for (size_t k = 0; k < dict->items.size(); ++k)
      out += (k ? ", " : "") + stringRepr(dict->items[k].first) + ": " +
             dict->items[k].second.repr();
    return out + "}";
  }
  case Kind::Namespace: {
    std::string out = "<Namespace {";
    for (size_t k = 0; k < dict->items.size(); ++k)
      out += (k ? ", " : "") + stringRepr(dict->items[k].first) + ": " +
             dict->items[k].second.repr();
    return out + "}>";
  }
  case Kind::Callable:
    return "<function " + fn->name + ">";
  default:
    return str();
  }
}

bool equal(const Value &a, const Value &b) {
  using K = Value::Kind;
  if (a.isNumber() && b.isNumber()) {
    if (a.kind != K::Float && b.kind != K::Float) {
      int64_t x = a.kind == K::Bool ? a.b : a.i, y = b.kind == K::Bool ? b.b : b.i;
      return x == y;
    }
    double x = a.kind == K::Float ? a.f : a.kind == K::Bool ? a.b : double(a.i);
    double y = b.kind == K::Float ? b.f : b.kind == K::Bool ? b.b : double(b.i);
    return x == y;
  }
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case K::Undefined:
  case K::None:
    return true;
  case K::String:
    return a.s == b.s;
  case K::List:
    if (a.list->size() != b.list->size())
      return false;
    for (size_t k = 0; k < a.list->size(); ++k)
      if (!equal((*a.list)[k], (*b.list)[k]))
        return false;
    return true;
  case K::Dict:
    if (a.dict->items.size() != b.dict->items.size())
      return false;
    for (const auto &kv : a.dict->items) {
      const Value *o = b.dict->find(kv.first);
      if (!o || !equal(kv.second, *o))
        return false;
    }
    return true;
  default:
    return a.dict == b.dict && a.fn == b.fn;
  }
}

bool less(const Value &a, const Value &b, bool *ok) {
  using K = Value::Kind;
  *ok = true;
  if (a.isNumber() && b.isNumber()) {
    double x = a.kind == K::Float ? a.f : a.kind == K::Bool ? a.b : double(a.i);
    double y = b.kind == K::Float ? b.f : b.kind == K::Bool ? b.b : double(b.i);
    if (a.kind != K::Float && b.kind != K::Float)
      return (a.kind == K::Bool ? a.b : a.i) < (b.kind == K::Bool ? b.b : b.i);
    return x < y;
  }
  if (a.kind == K::String && b.kind == K::String)
    return a.s < b.s; // UTF-8 byte order is code point order
  if (a.kind == K::List && b.kind == K::List) {
    size_t n = std::min(a.list->size(), b.list->size());
    for (size_t k = 0; k < n; ++k) {
      if (equal((*a.list)[k], (*b.list)[k]))
        continue;
      return less((*a.list)[k], (*b.list)[k], ok);
    }
    return a.list->size() < b.list->size();
  }
  *ok = false;
  return false;
}

namespace {

void jsonString(const std::string &s, std::string &out) { rt::appendJsonString(out, s); }

struct JsonWriter {
  int indent;
  bool sortKeys;
  std::string itemSep, keySep;
  bool failed = false;
  std::string failure = {};

  void newline(std::string &out, int level) {
    out.push_back('\n');
    out.append(static_cast<size_t>(indent * level), ' ');
  }
  void write(const Value &v, std::string &out, int level) {
    using K = Value::Kind;
    switch (v.kind) {
    case K::None:
      out += "null";
      return;
    case K::Bool:
      out += v.b ? "true" : "false";
      return;
    case K::Int:
      out += std::to_string(v.i);
      return;
    case K::Float:
      if (std::isnan(v.f))
        out += "NaN";
      else if (std::isinf(v.f))
        out += v.f < 0 ? "-Infinity" : "Infinity";
      else
        out += floatRepr(v.f);
      return;
    case K::String:
      jsonString(v.s, out);
      return;
    case K::List: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out.push_back('[');
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k)
          out += itemSep;
        if (indent >= 0)
          newline(out, level + 1);
        write((*v.list)[k], out, level + 1);
      }
      if (indent >= 0)
        newline(out, level);
      out.push_back(']');
      return;
    }
    case K::Dict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value> *> items;
      for (const auto &kv : v.dict->items)
        items.push_back(&kv);
      if (sortKeys) // keys are unique: no ties to keep in order
        std::sort(items.begin(), items.end(),
                  [](auto *x, auto *y) { return x->first < y->first; });
      out.push_back('{');
      for (size_t k = 0; k < items.size(); ++k) {
        if (k)
          out += itemSep;
        if (indent >= 0)
          newline(out, level + 1);
        jsonString(items[k]->first, out);
        out += keySep;
        write(items[k]->second, out, level + 1);
      }
      if (indent >= 0)
        newline(out, level);
      out.push_back('}');
      return;
    }
    default:
      failed = true;
      failure = std::string("Object of type ") + v.typeName() +
                " is not JSON serializable";
    }
  }
};

} // namespace

std::string toJson(const Value &v, int indent, bool sortKeys,
                   const std::string &itemSep, const std::string &keySep) {
  JsonWriter w{indent, sortKeys, itemSep, keySep};
  std::string out;
  w.write(v, out, 0);
  if (w.failed)
    throw std::runtime_error(w.failure);
  return out;
}

} // namespace fm::chat
