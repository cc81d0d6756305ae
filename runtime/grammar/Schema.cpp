// JSON Schema to grammar: every schema becomes a Content (constraints split by JSON type),
// allOf and $ref siblings intersect Contents, anyOf distributes over the rest, and each Content
// is emitted once as a rule (so recursive $refs become recursive rules).
#include "grammar/Schema.h"

#include "grammar/Formats.h"
#include "grammar/Json.h"
#include "grammar/JsonRules.h"
#include "grammar/Regex.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>

namespace fm::grammar {

namespace {

enum TypeBit : uint8_t {
  kNull = 1,
  kBool = 2,
  kInt = 4,  // numbers with no fractional part
  kFrac = 8, // numbers with one
  kStr = 16,
  kArr = 32,
  kObj = 64,
  kAllTypes = 127,
};

constexpr int32_t kAbsent = -1;

struct Bound {
  Decimal value;
  bool exclusive = false;
};

/// What a schema demands, split by the JSON type of the instance.
struct Content {
  uint8_t types = kAllTypes;
  std::optional<Bound> lower, upper;
  std::vector<std::pair<std::string, std::string>> patterns; // (regex, pointer)
  std::vector<std::string> formats;
  int64_t minLength = 0, maxLength = -1;
  std::vector<int32_t> prefix;
  int32_t items = kAbsent;
  int64_t minItems = 0, maxItems = -1;
  std::vector<std::pair<std::string, int32_t>> properties;
  std::vector<std::string> required;
  int32_t additional = kAbsent;
  bool hasLiterals = false;
  std::vector<JsonValue> literals;
  std::vector<std::vector<int32_t>> anyOf;

  int32_t property(const std::string &key) const {
    for (const auto &[k, id] : properties)
      if (k == key)
        return id;
    return kAbsent;
  }
  bool trivial() const {
    return types == kAllTypes && !lower && !upper && patterns.empty() && formats.empty() &&
           minLength == 0 && maxLength < 0 && prefix.empty() && items == kAbsent &&
           minItems == 0 && maxItems < 0 && properties.empty() && required.empty() &&
           additional == kAbsent && !hasLiterals && anyOf.empty();
  }
};

const std::set<std::string> kConstraintKeywords = {
    "type",      "properties",       "required",         "additionalProperties",
    "items",     "prefixItems",      "minItems",         "maxItems",
    "enum",      "const",            "anyOf",            "oneOf",
    "allOf",     "$ref",             "$defs",            "definitions",
    "minLength", "maxLength",        "pattern",          "format",
    "minimum",   "maximum",          "exclusiveMinimum", "exclusiveMaximum"};
const std::set<std::string> kAnnotations = {"$schema", "$id",     "$comment", "title",
                                            "description", "default", "examples", "deprecated",
                                            "readOnly",    "writeOnly"};
const std::set<std::string> kFormats = {"date", "time", "date-time", "uuid"};

class SchemaCompiler {
public:
  explicit SchemaCompiler(GrammarMode mode) : rules_(cfg_, mode) {}

  Expected<Cfg> compile(std::string_view text) {
    auto doc = parseJson(text, "schema");
    if (!doc)
      return doc.status();
    root_ = std::move(*doc);
    if (root_.type == JsonValue::Object)
      if (const JsonValue *id = root_.get("$id"); id && id->type == JsonValue::String)
        rootId_ = id->text;
    FM_RETURN_IF_ERROR(checkKeywords(root_, "", true));
    auto rootId = idOf(&root_, "");
    if (!rootId)
      return rootId.status();
    auto sym = emit(*rootId);
    if (!sym)
      return sym.status();
    std::vector<Sym> seq = rules_.ws();
    seq.push_back(*sym);
    std::vector<Sym> w = rules_.ws();
    seq.insert(seq.end(), w.begin(), w.end());
    int32_t top = cfg_.addRule("root");
    cfg_.addAlt(top, std::move(seq));
    cfg_.root = top;
    return std::move(cfg_);
  }

private:
  struct Node {
    enum Kind { Schema, Intersect, Derived } kind = Schema;
    const JsonValue *schema = nullptr;
    std::string pointer;
    int32_t a = kAbsent, b = kAbsent;
    Content content;
    bool built = false, building = false;
  };

  static Status at(const std::string &pointer, const std::string &what) {
    return Status::error("schema " + (pointer.empty() ? std::string("(root)") : pointer) + ": " +
                         what);
  }

  // -- keyword check over the whole document --------------------------------------------------

  Status checkKeywords(const JsonValue &s, const std::string &ptr, bool isRoot) {
    if (s.type == JsonValue::Bool)
      return Status::ok();
    if (s.type != JsonValue::Object)
      return at(ptr, "a schema must be an object or a boolean");
    for (const auto &[k, v] : s.members) {
      std::string kp = ptr + "/" + pointerToken(k);
      if (kAnnotations.count(k)) {
        if (k == "$id" && !isRoot)
          return at(kp, "'$id' below the root (a new base URI) is not supported");
        continue;
      }
      if (!kConstraintKeywords.count(k))
        return at(kp, "unsupported keyword '" + k + "'");
      if (k == "properties" || k == "$defs" || k == "definitions") {
        if (v.type != JsonValue::Object)
          return at(kp, "'" + k + "' must be an object");
        for (const auto &[name, sub] : v.members)
          FM_RETURN_IF_ERROR(checkKeywords(sub, kp + "/" + pointerToken(name), false));
      } else if (k == "additionalProperties" || k == "items") {
        if (k == "items" && v.type == JsonValue::Array)
          return at(kp, "'items' as an array is draft 7; use 'prefixItems'");
        FM_RETURN_IF_ERROR(checkKeywords(v, kp, false));
      } else if (k == "prefixItems" || k == "anyOf" || k == "oneOf" || k == "allOf") {
        if (v.type != JsonValue::Array || v.items.empty())
          return at(kp, "'" + k + "' must be a non-empty array of schemas");
        for (size_t i = 0; i < v.items.size(); ++i)
          FM_RETURN_IF_ERROR(checkKeywords(v.items[i], kp + "/" + std::to_string(i), false));
      }
    }
    return Status::ok();
  }

  // -- nodes ----------------------------------------------------------------------------------

  Expected<const JsonValue *> resolve(const std::string &ref, const std::string &ptr,
                                      std::string *targetPtr) {
    std::string r = ref;
    if (!rootId_.empty() && r.compare(0, rootId_.size(), rootId_) == 0)
      r = r.substr(rootId_.size());
    if (r.empty())
      r = "#";
    if (r[0] != '#')
      return at(ptr, "remote $ref '" + ref + "' is not supported (only '#...' in this document)");
    std::string frag = r.substr(1);
    // Percent-decoding, then JSON-pointer tokens.
    std::string decoded;
    for (size_t i = 0; i < frag.size(); ++i) {
      if (frag[i] == '%' && i + 2 < frag.size() && std::isxdigit(uint8_t(frag[i + 1])) &&
          std::isxdigit(uint8_t(frag[i + 2]))) {
        int v = std::stoi(frag.substr(i + 1, 2), nullptr, 16);
        decoded += char(v);
        i += 2;
      } else {
        decoded += frag[i];
      }
    }
    if (!decoded.empty() && decoded[0] != '/')
      return at(ptr, "$ref to an anchor '" + ref + "' is not supported");
    const JsonValue *cur = &root_;
    std::string canonical;
    size_t i = 0;
    while (i < decoded.size()) {
      size_t next = decoded.find('/', i + 1);
      std::string tok = decoded.substr(i + 1, next == std::string::npos ? std::string::npos
                                                                        : next - i - 1);
      i = next == std::string::npos ? decoded.size() : next;
      std::string key;
      for (size_t k = 0; k < tok.size(); ++k) {
        if (tok[k] == '~' && k + 1 < tok.size() && (tok[k + 1] == '0' || tok[k + 1] == '1')) {
          key += tok[k + 1] == '0' ? '~' : '/';
          ++k;
        } else {
          key += tok[k];
        }
      }
      if (cur->type == JsonValue::Object) {
        cur = cur->get(key);
      } else if (cur->type == JsonValue::Array && !key.empty() &&
                 key.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoul(key) < cur->items.size()) {
        cur = &cur->items[std::stoul(key)];
      } else {
        cur = nullptr;
      }
      if (!cur)
        return at(ptr, "$ref '" + ref + "' points at nothing");
      canonical += "/" + pointerToken(key);
    }
    *targetPtr = canonical;
    return cur;
  }

  // The node of the schema at `ptr`; a schema that is only a $ref (plus annotations) is the
  // node of its target, so recursion through refs closes into one rule.
  Expected<int32_t> idOf(const JsonValue *s, const std::string &ptr) {
    auto it = byPointer_.find(ptr);
    if (it != byPointer_.end())
      return it->second;
    if (s->type == JsonValue::Object) {
      const JsonValue *ref = s->get("$ref");
      bool onlyRef = ref != nullptr;
      for (const auto &[k, v] : s->members)
        if (k != "$ref" && k != "$defs" && k != "definitions" && !kAnnotations.count(k))
          onlyRef = false;
      if (onlyRef) {
        if (ref->type != JsonValue::String)
          return at(ptr + "/$ref", "'$ref' must be a string");
        if (aliasing_.count(ptr))
          return at(ptr, "$ref cycle with no schema in between");
        std::string target;
        auto t = resolve(ref->text, ptr + "/$ref", &target);
        if (!t)
          return t.status();
        aliasing_.insert(ptr);
        auto id = idOf(*t, target);
        aliasing_.erase(ptr);
        if (id)
          byPointer_[ptr] = *id;
        return id;
      }
    }
    Node n;
    n.kind = Node::Schema;
    n.schema = s;
    n.pointer = ptr;
    nodes_.push_back(std::move(n));
    int32_t id = int32_t(nodes_.size() - 1);
    byPointer_[ptr] = id;
    return id;
  }

  int32_t derived(Content c, const std::string &ptr) {
    Node n;
    n.kind = Node::Derived;
    n.content = std::move(c);
    n.built = true;
    n.pointer = ptr;
    nodes_.push_back(std::move(n));
    return int32_t(nodes_.size() - 1);
  }

  int32_t intersectIds(int32_t a, int32_t b) {
    if (a == kAbsent)
      return b;
    if (b == kAbsent || a == b)
      return a;
    auto key = std::make_pair(std::min(a, b), std::max(a, b));
    auto it = intersections_.find(key);
    if (it != intersections_.end())
      return it->second;
    Node n;
    n.kind = Node::Intersect;
    n.a = key.first;
    n.b = key.second;
    n.pointer = nodes_[a].pointer;
    nodes_.push_back(std::move(n));
    int32_t id = int32_t(nodes_.size() - 1);
    intersections_[key] = id;
    return id;
  }

  Expected<const Content *> content(int32_t id) {
    Node &n = nodes_[id];
    if (n.built)
      return &nodes_[id].content;
    if (n.building)
      return at(n.pointer, "a recursive $ref meets allOf or sibling keywords, which would need "
                           "an infinite intersection");
    nodes_[id].building = true;
    Expected<Content> c = Status::error("");
    if (nodes_[id].kind == Node::Schema) {
      c = fromSchema(*nodes_[id].schema, nodes_[id].pointer);
    } else {
      int32_t a = nodes_[id].a, b = nodes_[id].b;
      auto ca = content(a);
      if (!ca)
        return ca.status();
      Content copy = **ca;
      auto cb = content(b);
      if (!cb)
        return cb.status();
      c = merge(copy, **cb);
    }
    if (!c)
      return c.status();
    nodes_[id].content = std::move(*c);
    nodes_[id].built = true;
    nodes_[id].building = false;
    return &nodes_[id].content;
  }

  // -- reading a schema -----------------------------------------------------------------------

  static Expected<int64_t> count(const JsonValue &v, const std::string &ptr) {
    Decimal d;
    if (v.type != JsonValue::Number || !Decimal::parse(v.text, &d) || !d.isInteger() ||
        (d.negative && !d.isZero()) || d.intPart().size() > 15)
      return at(ptr, "must be a non-negative integer");
    return int64_t(std::stoll(d.intPart()));
  }

  static void tighten(std::optional<Bound> &b, const Bound &n, bool lower) {
    if (!b) {
      b = n;
      return;
    }
    int c = compareDecimal(n.value, b->value);
    if ((lower && c > 0) || (!lower && c < 0))
      b = n;
    else if (c == 0)
      b->exclusive = b->exclusive || n.exclusive;
  }

  Expected<Content> fromSchema(const JsonValue &s, const std::string &ptr) {
    Content c;
    if (s.type == JsonValue::Bool) {
      if (!s.boolean)
        c.types = 0;
      return c;
    }
    for (const auto &[k, v] : s.members) {
      std::string kp = ptr + "/" + pointerToken(k);
      if (k == "type") {
        std::vector<const JsonValue *> names;
        if (v.type == JsonValue::String)
          names.push_back(&v);
        else if (v.type == JsonValue::Array)
          for (const auto &x : v.items)
            names.push_back(&x);
        if (names.empty())
          return at(kp, "'type' must be a type name or a non-empty array of them");
        uint8_t t = 0;
        for (const JsonValue *x : names) {
          static const std::map<std::string, uint8_t> kTypes = {
              {"null", kNull},   {"boolean", kBool}, {"integer", kInt}, {"number", kInt | kFrac},
              {"string", kStr},  {"array", kArr},    {"object", kObj}};
          auto it = x->type == JsonValue::String ? kTypes.find(x->text) : kTypes.end();
          if (it == kTypes.end())
            return at(kp, "unknown type " + (x->type == JsonValue::String ? "'" + x->text + "'"
                                                                          : std::string("value")));
          t |= it->second;
        }
        c.types &= t;
      } else if (k == "enum" || k == "const") {
        if (k == "enum" && v.type != JsonValue::Array)
          return at(kp, "'enum' must be an array");
        std::vector<JsonValue> lits = k == "enum" ? v.items : std::vector<JsonValue>{v};
        if (c.hasLiterals) {
          std::vector<JsonValue> both;
          for (const auto &x : c.literals)
            for (const auto &y : lits)
              if (jsonEqual(x, y)) {
                both.push_back(x);
                break;
              }
          c.literals = std::move(both);
        } else {
          c.hasLiterals = true;
          c.literals = std::move(lits);
        }
      } else if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" ||
                 k == "exclusiveMaximum") {
        Bound b;
        if (v.type != JsonValue::Number || !Decimal::parse(v.text, &b.value))
          return at(kp, "'" + k + "' must be a number");
        if (b.value.intPart().size() > 64 || b.value.fracPart().size() > 64)
          return at(kp, "'" + k + "' has more than 64 digits before or after the point");
        b.exclusive = k[0] == 'e';
        bool isLower = k == "minimum" || k == "exclusiveMinimum";
        tighten(isLower ? c.lower : c.upper, b, isLower);
      } else if (k == "minLength" || k == "maxLength" || k == "minItems" || k == "maxItems") {
        auto n = count(v, kp);
        if (!n)
          return n.status();
        constexpr int64_t kMaxLength = 4096, kMaxItems = 100000;
        if ((k == "minLength" || k == "maxLength") && *n > kMaxLength)
          return at(kp, "'" + k + "' above " + std::to_string(kMaxLength) +
                            " is not supported (a grammar counts characters one state each)");
        if ((k == "minItems" || k == "maxItems") && *n > kMaxItems)
          return at(kp, "'" + k + "' above " + std::to_string(kMaxItems) + " is not supported");
        if (k == "minLength")
          c.minLength = std::max(c.minLength, *n);
        else if (k == "maxLength")
          c.maxLength = *n;
        else if (k == "minItems")
          c.minItems = std::max(c.minItems, *n);
        else
          c.maxItems = *n;
      } else if (k == "pattern") {
        if (v.type != JsonValue::String)
          return at(kp, "'pattern' must be a string");
        auto nfa = compileRegex(v.text, RegexMode::Search);
        if (!nfa)
          return at(kp, nfa.message());
        c.patterns.push_back({v.text, kp});
      } else if (k == "format") {
        if (v.type != JsonValue::String)
          return at(kp, "'format' must be a string");
        if (!kFormats.count(v.text))
          return at(kp, "format '" + v.text +
                            "' is not supported (supported: date, time, date-time, uuid)");
        c.formats.push_back(v.text);
      } else if (k == "properties") {
        for (const auto &[name, sub] : v.members) {
          auto id = idOf(&sub, kp + "/" + pointerToken(name));
          if (!id)
            return id.status();
          c.properties.push_back({name, *id});
        }
      } else if (k == "required") {
        if (v.type != JsonValue::Array)
          return at(kp, "'required' must be an array of strings");
        for (const auto &x : v.items) {
          if (x.type != JsonValue::String)
            return at(kp, "'required' must be an array of strings");
          if (std::find(c.required.begin(), c.required.end(), x.text) == c.required.end())
            c.required.push_back(x.text);
        }
      } else if (k == "additionalProperties" || k == "items") {
        auto id = idOf(&v, kp);
        if (!id)
          return id.status();
        (k == "items" ? c.items : c.additional) = *id;
      } else if (k == "prefixItems") {
        for (size_t i = 0; i < v.items.size(); ++i) {
          auto id = idOf(&v.items[i], kp + "/" + std::to_string(i));
          if (!id)
            return id.status();
          c.prefix.push_back(*id);
        }
      } else if (k == "anyOf" || k == "oneOf") {
        std::vector<int32_t> group;
        for (size_t i = 0; i < v.items.size(); ++i) {
          auto id = idOf(&v.items[i], kp + "/" + std::to_string(i));
          if (!id)
            return id.status();
          group.push_back(*id);
        }
        c.anyOf.push_back(std::move(group));
      }
    }
    // allOf and a $ref with siblings intersect with what the rest says.
    if (const JsonValue *all = s.get("allOf")) {
      for (size_t i = 0; i < all->items.size(); ++i) {
        auto id = idOf(&all->items[i], ptr + "/allOf/" + std::to_string(i));
        if (!id)
          return id.status();
        auto sub = content(*id);
        if (!sub)
          return sub.status();
        auto m = merge(c, **sub);
        if (!m)
          return m.status();
        c = std::move(*m);
      }
    }
    if (const JsonValue *ref = s.get("$ref")) {
      if (ref->type != JsonValue::String)
        return at(ptr + "/$ref", "'$ref' must be a string");
      std::string target;
      auto t = resolve(ref->text, ptr + "/$ref", &target);
      if (!t)
        return t.status();
      auto id = idOf(*t, target);
      if (!id)
        return id.status();
      auto sub = content(*id);
      if (!sub)
        return sub.status();
      auto m = merge(c, **sub);
      if (!m)
        return m.status();
      c = std::move(*m);
    }
    return c;
  }

  Expected<Content> merge(const Content &a, const Content &b) {
    Content c;
    c.types = a.types & b.types;
    c.lower = a.lower;
    if (b.lower)
      tighten(c.lower, *b.lower, true);
    c.upper = a.upper;
    if (b.upper)
      tighten(c.upper, *b.upper, false);
    c.patterns = a.patterns;
    c.patterns.insert(c.patterns.end(), b.patterns.begin(), b.patterns.end());
    c.formats = a.formats;
    c.formats.insert(c.formats.end(), b.formats.begin(), b.formats.end());
    c.minLength = std::max(a.minLength, b.minLength);
    c.maxLength = a.maxLength < 0   ? b.maxLength
                  : b.maxLength < 0 ? a.maxLength
                                    : std::min(a.maxLength, b.maxLength);
    size_t np = std::max(a.prefix.size(), b.prefix.size());
    for (size_t i = 0; i < np; ++i) {
      int32_t x = i < a.prefix.size() ? a.prefix[i] : a.items;
      int32_t y = i < b.prefix.size() ? b.prefix[i] : b.items;
      c.prefix.push_back(x == kAbsent && y == kAbsent ? trueId() : intersectIds(x, y));
    }
    c.items = intersectIds(a.items, b.items);
    c.minItems = std::max(a.minItems, b.minItems);
    c.maxItems = a.maxItems < 0   ? b.maxItems
                 : b.maxItems < 0 ? a.maxItems
                                  : std::min(a.maxItems, b.maxItems);
    std::vector<std::string> keys;
    for (const auto &p : a.properties)
      keys.push_back(p.first);
    for (const auto &p : b.properties)
      if (a.property(p.first) == kAbsent)
        keys.push_back(p.first);
    for (const std::string &k : keys) {
      int32_t x = a.property(k), y = b.property(k);
      if (x == kAbsent)
        x = a.additional;
      if (y == kAbsent)
        y = b.additional;
      c.properties.push_back({k, x == kAbsent && y == kAbsent ? trueId() : intersectIds(x, y)});
    }
    c.additional = intersectIds(a.additional, b.additional);
    c.required = a.required;
    for (const auto &r : b.required)
      if (std::find(c.required.begin(), c.required.end(), r) == c.required.end())
        c.required.push_back(r);
    if (a.hasLiterals && b.hasLiterals) {
      c.hasLiterals = true;
      for (const auto &x : a.literals)
        for (const auto &y : b.literals)
          if (jsonEqual(x, y)) {
            c.literals.push_back(x);
            break;
          }
    } else if (a.hasLiterals || b.hasLiterals) {
      c.hasLiterals = true;
      c.literals = a.hasLiterals ? a.literals : b.literals;
    }
    c.anyOf = a.anyOf;
    c.anyOf.insert(c.anyOf.end(), b.anyOf.begin(), b.anyOf.end());
    return c;
  }

  int32_t trueId() {
    if (trueId_ < 0)
      trueId_ = derived(Content{}, "(true)");
    return trueId_;
  }

  // -- validating literals (enum/const next to other keywords) -------------------------------

  Expected<bool> validate(const JsonValue &v, int32_t id) {
    auto c = content(id);
    if (!c)
      return c.status();
    return validate(v, **c);
  }

  Expected<bool> validate(const JsonValue &v, const Content &c) {
    uint8_t t = v.type == JsonValue::Null     ? kNull
                : v.type == JsonValue::Bool   ? kBool
                : v.type == JsonValue::Number ? (v.isInteger() ? kInt : kFrac)
                : v.type == JsonValue::String ? kStr
                : v.type == JsonValue::Array  ? kArr
                                              : kObj;
    if (!(c.types & t))
      return false;
    if (c.hasLiterals && std::none_of(c.literals.begin(), c.literals.end(),
                                      [&](const JsonValue &x) { return jsonEqual(x, v); }))
      return false;
    if (t == kInt || t == kFrac) {
      Decimal d;
      Decimal::parse(v.text, &d);
      if (c.lower) {
        int r = compareDecimal(d, c.lower->value);
        if (r < 0 || (r == 0 && c.lower->exclusive))
          return false;
      }
      if (c.upper) {
        int r = compareDecimal(d, c.upper->value);
        if (r > 0 || (r == 0 && c.upper->exclusive))
          return false;
      }
    } else if (t == kStr) {
      std::u32string cps;
      for (size_t i = 0; i < v.text.size();) {
        uint32_t cp;
        if (!decodeUtf8(v.text, &i, &cp))
          return false;
        cps.push_back(cp);
      }
      if (int64_t(cps.size()) < c.minLength || (c.maxLength >= 0 && int64_t(cps.size()) > c.maxLength))
        return false;
      for (const auto &[re, kp] : c.patterns) {
        auto nfa = compileRegex(re, RegexMode::Search);
        if (!nfa)
          return at(kp, nfa.message());
        if (!nfaMatches(*nfa, cps))
          return false;
      }
      for (const std::string &f : c.formats) {
        auto nfa = compileRegex(formatRegex(f, true), RegexMode::FullMatch, size_t(1) << 20);
        if (!nfa || !nfaMatches(*nfa, cps))
          return false;
      }
    } else if (t == kArr) {
      int64_t n = int64_t(v.items.size());
      if (n < c.minItems || (c.maxItems >= 0 && n > c.maxItems))
        return false;
      for (size_t i = 0; i < v.items.size(); ++i) {
        int32_t e = i < c.prefix.size() ? c.prefix[i] : c.items;
        if (e == kAbsent)
          continue;
        auto ok = validate(v.items[i], e);
        if (!ok || !*ok)
          return ok;
      }
    } else if (t == kObj) {
      for (const std::string &r : c.required)
        if (!v.get(r))
          return false;
      for (const auto &[k, x] : v.members) {
        int32_t e = c.property(k);
        if (e == kAbsent)
          e = c.additional;
        if (e == kAbsent)
          continue;
        auto ok = validate(x, e);
        if (!ok || !*ok)
          return ok;
      }
    }
    for (const auto &group : c.anyOf) {
      bool any = false;
      for (int32_t g : group) {
        auto ok = validate(v, g);
        if (!ok)
          return ok;
        if (*ok) {
          any = true;
          break;
        }
      }
      if (!any)
        return false;
    }
    return true;
  }

  // -- emission ---------------------------------------------------------------------------------

  Expected<Sym> emit(int32_t id) {
    auto it = emitted_.find(id);
    if (it != emitted_.end())
      return it->second;
    auto cp = content(id);
    if (!cp)
      return cp.status();
    std::string name = nodes_[id].pointer.empty() ? "#" : nodes_[id].pointer;
    int32_t rule = cfg_.addRule(name);
    emitted_[id] = rule;
    Content c = **cp;
    if (!c.anyOf.empty()) {
      std::vector<int32_t> group = c.anyOf.front();
      c.anyOf.erase(c.anyOf.begin());
      bool trivial = c.trivial();
      int32_t rest = trivial ? kAbsent : derived(c, nodes_[id].pointer);
      for (int32_t g : group) {
        auto s = emit(trivial ? g : intersectIds(rest, g));
        if (!s)
          return s;
        cfg_.addAlt(rule, {*s});
      }
      return rule;
    }
    FM_RETURN_IF_ERROR(emitBase(c, name, rule));
    return rule;
  }

  Status emitBase(const Content &c, const std::string &name, int32_t rule) {
    if (c.hasLiterals) {
      Content rest = c;
      rest.hasLiterals = false;
      rest.literals.clear();
      for (const JsonValue &lit : c.literals) {
        auto ok = validate(lit, rest);
        if (!ok)
          return ok.status();
        if (!*ok)
          continue;
        auto s = rules_.literal(lit);
        if (!s)
          return at(name, s.message());
        cfg_.addAlt(rule, {*s});
      }
      return Status::ok();
    }
    if (c.types & kNull)
      cfg_.addAlt(rule, {cfg_.literal("null")});
    if (c.types & kBool) {
      cfg_.addAlt(rule, {cfg_.literal("true")});
      cfg_.addAlt(rule, {cfg_.literal("false")});
    }
    if (c.types & (kInt | kFrac)) {
      auto lower = c.lower ? std::optional<std::pair<Decimal, bool>>({c.lower->value, c.lower->exclusive})
                           : std::nullopt;
      auto upper = c.upper ? std::optional<std::pair<Decimal, bool>>({c.upper->value, c.upper->exclusive})
                           : std::nullopt;
      auto s = rules_.number(!(c.types & kFrac), lower, upper);
      if (!s)
        return at(name, s.message());
      cfg_.addAlt(rule, {*s});
    }
    if (c.types & kStr) {
      auto s = emitString(c, name);
      if (!s)
        return s.status();
      cfg_.addAlt(rule, {*s});
    }
    if (c.types & kArr) {
      std::vector<Sym> elements;
      for (int32_t p : c.prefix) {
        auto s = emit(p);
        if (!s)
          return s.status();
        elements.push_back(*s);
      }
      Sym rest = -1;
      if (c.items != kAbsent) {
        auto s = emit(c.items);
        if (!s)
          return s.status();
        rest = *s;
      } else if (c.prefix.empty() || rules_.check()) {
        rest = rules_.anyValue();
      }
      auto s = rules_.array(elements, rest, c.minItems, c.maxItems, name);
      if (!s)
        return at(name, s.message());
      cfg_.addAlt(rule, {*s});
    }
    if (c.types & kObj) {
      auto s = emitObject(c, name);
      if (!s)
        return s.status();
      cfg_.addAlt(rule, {*s});
    }
    return Status::ok();
  }

  Expected<Sym> emitString(const Content &c, const std::string &name) {
    if (c.patterns.empty() && c.formats.empty() && c.minLength == 0 && c.maxLength < 0)
      return rules_.anyString();
    CharNfa nfa = lengthNfa(c.minLength, c.maxLength, CpSet::all());
    for (const auto &[re, kp] : c.patterns) {
      auto p = compileRegex(re, RegexMode::Search);
      if (!p)
        return at(kp, p.message());
      nfa = grammar::intersect(nfa, *p);
    }
    for (const std::string &f : c.formats) {
      auto p = compileRegex(formatRegex(f, rules_.check()), RegexMode::FullMatch, size_t(1) << 20);
      if (!p)
        return at(name, "internal error in format '" + f + "': " + p.message());
      nfa = grammar::intersect(nfa, *p);
    }
    if (nfa.emptyLanguage())
      return cfg_.nothing();
    return rules_.string(determinize(nfa, 2000), name + " (string)");
  }

  Expected<Sym> emitObject(const Content &c, const std::string &name) {
    std::vector<JsonRules::Member> members;
    std::vector<std::string> known;
    auto isRequired = [&](const std::string &k) {
      return std::find(c.required.begin(), c.required.end(), k) != c.required.end();
    };
    Sym additional = -1;
    bool additionalEmpty = false;
    if (c.additional != kAbsent) {
      auto ac = content(c.additional);
      if (!ac)
        return ac.status();
      additionalEmpty = (*ac)->types == 0;
      if (!additionalEmpty) {
        auto s = emit(c.additional);
        if (!s)
          return s;
        additional = *s;
      }
    }
    for (const auto &[k, id] : c.properties) {
      auto s = emit(id);
      if (!s)
        return s;
      members.push_back({k, *s, isRequired(k)});
      known.push_back(k);
    }
    for (const std::string &r : c.required) {
      if (c.property(r) != kAbsent)
        continue;
      // Required but not described: its value is whatever additionalProperties allows.
      Sym v = c.additional == kAbsent ? rules_.anyValue() : additionalEmpty ? cfg_.nothing() : additional;
      members.push_back({r, v, true});
      known.push_back(r);
    }
    Sym extraValue = -1;
    if (c.additional != kAbsent)
      extraValue = additionalEmpty ? -1 : additional;
    else if (rules_.check() || c.properties.empty())
      extraValue = rules_.anyValue();
    Sym extraKey = -1;
    if (extraValue >= 0)
      extraKey = known.empty() ? rules_.anyString() : rules_.keyExcept(known);
    auto s = rules_.object(members, extraKey, extraValue, name);
    if (!s)
      return at(name, s.message());
    return s;
  }

  Cfg cfg_;
  JsonRules rules_;
  JsonValue root_;
  std::string rootId_;
  std::deque<Node> nodes_; // stable addresses: content() hands out pointers
  std::map<std::string, int32_t> byPointer_;
  std::set<std::string> aliasing_;
  std::map<std::pair<int32_t, int32_t>, int32_t> intersections_;
  std::map<int32_t, Sym> emitted_;
  int32_t trueId_ = -1;
};

} // namespace

Expected<Cfg> compileJsonSchema(std::string_view text, GrammarMode mode) {
  return SchemaCompiler(mode).compile(text);
}

} // namespace fm::grammar
