// JSON text as grammar rules, in Generate (canonical) and Check (lenient) spellings.
#include "grammar/JsonRules.h"

#include "grammar/NumberRange.h"
#include "grammar/Regex.h"

#include <algorithm>

namespace fm::grammar {

JsonRules::JsonRules(Cfg &cfg, GrammarMode mode) : cfg_(cfg), mode_(mode) {}

CharEncoder JsonRules::rawEncoder() {
  return [this](const CpSet &c) -> const std::vector<std::vector<Sym>> & { return cfg_.utf8Alts(c); };
}

std::vector<Sym> JsonRules::ws() {
  if (!check())
    return {};
  if (ws_ < 0) {
    ByteSet s;
    for (uint8_t b : {' ', '\t', '\n', '\r'})
      s.set(b);
    ws_ = cfg_.repeat(cfg_.terminal(s), 0, -1, "ws");
  }
  return {ws_};
}

Sym JsonRules::hex4(uint32_t lo, uint32_t hi, bool lowerOnly) {
  std::vector<std::vector<Sym>> alts;
  for (const auto &family : digitRanges(lo, hi, 16, 4)) {
    std::vector<Sym> alt{cfg_.byte('\\'), cfg_.byte('u')};
    for (auto [a, b] : family) {
      ByteSet set;
      for (uint32_t d = a; d <= b; ++d) {
        set.set(uint8_t(d < 10 ? '0' + d : 'a' + d - 10));
        if (d >= 10 && !lowerOnly)
          set.set(uint8_t('A' + d - 10));
      }
      alt.push_back(cfg_.terminal(set));
    }
    alts.push_back(std::move(alt));
  }
  return cfg_.choice(std::move(alts), "\\uXXXX");
}

Sym JsonRules::stringChar(const CpSet &set) {
  auto it = chars_.find(set);
  if (it != chars_.end())
    return it->second;
  std::vector<std::vector<Sym>> alts = stringCharAlts(set);
  Sym s = alts.empty() ? cfg_.nothing() : cfg_.choice(std::move(alts), "char");
  chars_[set] = s;
  return s;
}

const std::vector<std::vector<Sym>> &JsonRules::stringCharAlts(const CpSet &set) {
  auto it = charAlts_.find(set);
  if (it != charAlts_.end())
    return it->second;
  std::vector<std::vector<Sym>> alts;
  CpSet rawOk = CpSet::range(0x20, kMaxCodePoint).minus(CpSet::of('"')).minus(CpSet::of('\\'));
  CpSet raw = set.intersect(rawOk);
  if (!raw.empty())
    alts = cfg_.utf8Alts(raw);
  auto bytes = [this](const std::string &s) {
    std::vector<Sym> seq;
    for (char c : s)
      seq.push_back(cfg_.byte(uint8_t(c)));
    return seq;
  };
  if (set.contains('"'))
    alts.push_back(bytes("\\\""));
  if (set.contains('\\'))
    alts.push_back(bytes("\\\\"));
  static const char kShort[32] = {0,   0, 0, 0, 0, 0, 0, 0, 'b', 't', 'n', 0, 'f', 'r', 0, 0,
                                  0,   0, 0, 0, 0, 0, 0, 0, 0,   0,   0,   0, 0,   0,   0, 0};
  for (uint32_t c = 0; c < 0x20; ++c) {
    if (!set.contains(c))
      continue;
    if (kShort[c]) {
      alts.push_back(bytes(std::string("\\") + kShort[c]));
    } else if (!check()) {
      static const char *hex = "0123456789abcdef";
      alts.push_back(bytes(std::string("\\u00") + hex[c >> 4] + hex[c & 15]));
    }
  }
  if (check()) {
    if (set.contains('/'))
      alts.push_back(bytes("\\/"));
    // Every character also as \uXXXX (BMP) or a surrogate pair (astral), in either case.
    CpSet bmp = set.intersect(CpSet::range(0, 0xFFFF));
    CpSet astral = set.intersect(CpSet::range(0x10000, kMaxCodePoint));
    for (auto [lo, hi] : bmp.ranges())
      alts.push_back({hex4(lo, hi, false)});
    for (auto [lo, hi] : astral.ranges())
      for (const auto &f : digitRanges(lo - 0x10000, hi - 0x10000, 1024, 2))
        alts.push_back({hex4(0xD800 + f[0].first, 0xD800 + f[0].second, false),
                        hex4(0xDC00 + f[1].first, 0xDC00 + f[1].second, false)});
  }
  return charAlts_[set] = std::move(alts);
}

Sym JsonRules::string(const CharNfa &content, const std::string &name) {
  Sym body = emitNfa(
      content, cfg_,
      [this](const CpSet &s) -> const std::vector<std::vector<Sym>> & { return stringCharAlts(s); },
      name);
  return cfg_.sequence({cfg_.byte('"'), body, cfg_.byte('"')}, name);
}

Sym JsonRules::anyString() {
  if (anyString_ < 0)
    anyString_ = string(lengthNfa(0, -1, CpSet::all()), "string");
  return anyString_;
}

Sym JsonRules::stringLiteral(const std::string &value) {
  std::vector<Sym> seq{cfg_.byte('"')};
  for (size_t i = 0; i < value.size();) {
    uint32_t cp;
    if (!decodeUtf8(value, &i, &cp))
      return cfg_.nothing();
    const auto &alts = stringCharAlts(CpSet::of(cp));
    if (alts.size() == 1)
      seq.insert(seq.end(), alts[0].begin(), alts[0].end()); // one spelling: inline
    else
      seq.push_back(stringChar(CpSet::of(cp)));
  }
  seq.push_back(cfg_.byte('"'));
  return cfg_.sequence(std::move(seq), "string literal");
}

Expected<Sym> JsonRules::regexSym(const std::string &regex, const std::string &name) {
  auto it = regexes_.find(regex);
  if (it != regexes_.end())
    return it->second;
  auto nfa = compileRegex(regex, RegexMode::FullMatch, size_t(1) << 20);
  if (!nfa)
    return Status::error("internal error in the regex for " + name + ": " + nfa.message());
  Sym s = nfa->emptyLanguage()
              ? cfg_.nothing()
              : emitNfa(*nfa, cfg_, rawEncoder(), name);
  regexes_[regex] = s;
  return s;
}

Expected<Sym> JsonRules::number(bool integerOnly,
                                const std::optional<std::pair<Decimal, bool>> &lower,
                                const std::optional<std::pair<Decimal, bool>> &upper) {
  const char *name = integerOnly ? "integer" : "number";
  if (!lower && !upper) {
    if (integerOnly)
      return regexSym(check() ? "-?(?:0|[1-9]\\d*)(?:\\.0+)?(?:[eE]\\+?\\d+)?"
                              : "-?(?:0|[1-9]\\d*)",
                      name);
    return regexSym("-?(?:0|[1-9]\\d*)(?:\\.\\d+)?(?:[eE][+-]?\\d+)?", name);
  }
  std::string form = integerOnly ? (check() ? "-?(?:0|[1-9]\\d*)(?:\\.0+)?" : "-?(?:0|[1-9]\\d*)")
                                 : "-?(?:0|[1-9]\\d*)(?:\\.\\d+)?";
  auto nfa = compileRegex(form, RegexMode::FullMatch, size_t(1) << 20);
  if (!nfa)
    return nfa.status();
  CharNfa range = *nfa;
  for (const std::string &bound :
       {lower ? atLeastRegex(lower->first, lower->second) : std::string(),
        upper ? atMostRegex(upper->first, upper->second) : std::string()}) {
    if (bound.empty())
      continue;
    auto b = compileRegex(bound, RegexMode::FullMatch, size_t(1) << 20);
    if (!b)
      return Status::error("internal error in a number bound: " + b.message());
    range = intersect(range, *b);
  }
  range = determinize(range, 4000);
  if (range.emptyLanguage())
    return cfg_.nothing();
  return emitNfa(range, cfg_, rawEncoder(), name);
}

Sym JsonRules::anyValue() {
  if (anyValue_ >= 0)
    return anyValue_;
  anyValue_ = cfg_.addRule("value");
  std::vector<Sym> w = ws();
  auto cat = [](std::initializer_list<std::vector<Sym>> parts) {
    std::vector<Sym> out;
    for (const auto &p : parts)
      out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  Sym str = anyString();
  Sym member = cfg_.sequence(cat({{str}, w, {cfg_.byte(':')}, w, {anyValue_}}), "member");
  Sym moreMembers =
      cfg_.repeat(cfg_.sequence(cat({w, {cfg_.byte(',')}, w, {member}}), ", member"), 0, -1,
                  "members");
  int32_t obj = cfg_.addRule("object");
  cfg_.addAlt(obj, cat({{cfg_.byte('{')}, w, {cfg_.byte('}')}}));
  cfg_.addAlt(obj, cat({{cfg_.byte('{')}, w, {member, moreMembers}, w, {cfg_.byte('}')}}));
  Sym moreItems =
      cfg_.repeat(cfg_.sequence(cat({w, {cfg_.byte(',')}, w, {anyValue_}}), ", value"), 0, -1,
                  "items");
  int32_t arr = cfg_.addRule("array");
  cfg_.addAlt(arr, cat({{cfg_.byte('[')}, w, {cfg_.byte(']')}}));
  cfg_.addAlt(arr, cat({{cfg_.byte('[')}, w, {anyValue_, moreItems}, w, {cfg_.byte(']')}}));
  Sym num = *number(false, std::nullopt, std::nullopt);
  for (Sym s : {Sym(obj), Sym(arr), str, num, cfg_.literal("true"), cfg_.literal("false"),
                cfg_.literal("null")})
    cfg_.addAlt(anyValue_, {s});
  return anyValue_;
}

Expected<Sym> JsonRules::literal(const JsonValue &v) {
  switch (v.type) {
  case JsonValue::Null:
    return cfg_.literal("null");
  case JsonValue::Bool:
    return cfg_.literal(v.boolean ? "true" : "false");
  case JsonValue::Number: {
    if (!check())
      return cfg_.literal(v.text);
    Decimal d;
    if (!Decimal::parse(v.text, &d))
      return Status::error("bad number " + v.text);
    return regexSym(numberEqualRegex(d), "number " + v.text);
  }
  case JsonValue::String:
    return stringLiteral(v.text);
  case JsonValue::Array: {
    std::vector<Sym> seq{cfg_.byte('[')};
    std::vector<Sym> w = ws();
    seq.insert(seq.end(), w.begin(), w.end());
    for (size_t i = 0; i < v.items.size(); ++i) {
      if (i) {
        seq.push_back(cfg_.byte(','));
        seq.insert(seq.end(), w.begin(), w.end());
      }
      auto e = literal(v.items[i]);
      if (!e)
        return e;
      seq.push_back(*e);
      seq.insert(seq.end(), w.begin(), w.end());
    }
    seq.push_back(cfg_.byte(']'));
    return cfg_.sequence(std::move(seq), "array literal");
  }
  case JsonValue::Object: {
    std::vector<Member> members;
    for (const auto &[k, value] : v.members) {
      auto e = literal(value);
      if (!e)
        return e;
      members.push_back({k, *e, true});
    }
    return object(members, -1, -1, "object literal");
  }
  }
  return cfg_.nothing();
}

Sym JsonRules::keyExcept(const std::vector<std::string> &known) {
  CharNfa nfa;
  nfa.addState(true); // the root: the empty key, unless it is known
  int32_t freeState = nfa.addState(true);
  std::vector<std::map<uint32_t, int32_t>> children(2);
  for (const std::string &key : known) {
    int32_t cur = 0;
    for (size_t i = 0; i < key.size();) {
      uint32_t cp;
      if (!decodeUtf8(key, &i, &cp))
        break;
      auto it = children[cur].find(cp);
      if (it == children[cur].end()) {
        int32_t s = nfa.addState(true);
        children.emplace_back();
        children[cur][cp] = s;
        cur = s;
      } else {
        cur = it->second;
      }
    }
    nfa.accept[cur] = 0;
  }
  nfa.addEdge(freeState, freeState, CpSet::all());
  for (size_t s = 0; s < children.size(); ++s) {
    if (int32_t(s) == freeState)
      continue;
    CpSet used;
    for (auto [cp, to] : children[s]) {
      nfa.addEdge(int32_t(s), to, CpSet::of(cp));
      used.add(cp, cp);
    }
    nfa.addEdge(int32_t(s), freeState, used.complement());
  }
  return string(determinize(removeEpsilons(nfa), 100000), "other key");
}

Expected<Sym> JsonRules::object(const std::vector<Member> &members, Sym extraKey,
                                Sym extraValue, const std::string &name) {
  std::vector<Sym> w = ws();
  auto cat = [](std::initializer_list<std::vector<Sym>> parts) {
    std::vector<Sym> out;
    for (const auto &p : parts)
      out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  std::vector<Sym> m;
  for (const Member &mem : members)
    m.push_back(cfg_.sequence(cat({{stringLiteral(mem.key)}, w, {cfg_.byte(':')}, w, {mem.value}}),
                              name + " member \"" + mem.key + "\""));
  bool extra = extraKey >= 0;
  Sym e = extra ? cfg_.sequence(cat({{extraKey}, w, {cfg_.byte(':')}, w, {extraValue}}),
                                name + " extra member")
                : -1;
  size_t n = members.size();
  Sym open = cfg_.byte('{'), close = cfg_.byte('}');

  if (!check()) {
    Sym comma = cfg_.byte(',');
    Sym t = extra ? cfg_.repeat(cfg_.sequence({comma, e}, ", extra"), 0, -1, name + " extras")
                  : cfg_.empty();
    Sym s = extra ? cfg_.choice({{}, {e, t}}, name + " extras") : cfg_.empty();
    for (size_t i = n; i-- > 0;) {
      Sym ti = members[i].required
                   ? cfg_.sequence({comma, m[i], t}, name + " after")
                   : cfg_.choice({{comma, m[i], t}, {t}}, name + " after");
      Sym si = members[i].required ? cfg_.sequence({m[i], t}, name + " from")
                                   : cfg_.choice({{m[i], t}, {s}}, name + " from");
      t = ti;
      s = si;
    }
    return cfg_.sequence({open, s, close}, name);
  }

  // Check mode: any order. Track which keys were seen (all when few, else the required ones).
  size_t required = size_t(std::count_if(members.begin(), members.end(),
                                         [](const Member &x) { return x.required; }));
  bool trackAll = n <= 8;
  if (!trackAll && required > 10)
    return Status::error(name + ": Check mode tracks at most 10 required properties in any "
                                "order when there are more than 8 properties (found " +
                         std::to_string(required) + " required)");
  std::vector<int32_t> bit(n, -1);
  uint32_t requiredMask = 0;
  int nextBit = 0;
  for (size_t i = 0; i < n; ++i)
    if (trackAll || members[i].required) {
      bit[i] = nextBit++;
      if (members[i].required)
        requiredMask |= 1u << bit[i];
    }
  std::map<uint32_t, int32_t> mRules, rRules;
  std::vector<uint32_t> todo;
  auto mRule = [&](uint32_t mask) {
    auto it = mRules.find(mask);
    if (it != mRules.end())
      return it->second;
    int32_t r = cfg_.addRule(name + " members");
    mRules[mask] = r;
    rRules[mask] = cfg_.addRule(name + " rest");
    todo.push_back(mask);
    return r;
  };
  Sym body = mRule(0);
  while (!todo.empty()) {
    uint32_t mask = todo.back();
    todo.pop_back();
    int32_t mr = mRules[mask], rr = rRules[mask];
    for (size_t i = 0; i < n; ++i) {
      if (bit[i] >= 0 && (mask >> bit[i]) & 1)
        continue;
      uint32_t next = bit[i] >= 0 ? mask | (1u << bit[i]) : mask;
      mRule(next);
      cfg_.addAlt(mr, {m[i], rRules[next]});
    }
    if (extra)
      cfg_.addAlt(mr, {e, rr});
    if ((mask & requiredMask) == requiredMask)
      cfg_.addAlt(rr, {});
    cfg_.addAlt(rr, cat({w, {cfg_.byte(',')}, w, {mr}}));
  }
  std::vector<std::vector<Sym>> alts;
  if (requiredMask == 0)
    alts.push_back(cat({{open}, w, {close}}));
  alts.push_back(cat({{open}, w, {body}, w, {close}}));
  return cfg_.choice(std::move(alts), name);
}

Expected<Sym> JsonRules::array(const std::vector<Sym> &elements, Sym rest, int64_t min,
                               int64_t max, const std::string &name) {
  constexpr int64_t kMaxChain = 100000;
  std::vector<Sym> w = ws();
  auto cat = [](std::initializer_list<std::vector<Sym>> parts) {
    std::vector<Sym> out;
    for (const auto &p : parts)
      out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  int64_t k = int64_t(elements.size());
  if (rest < 0)
    max = max < 0 ? k : std::min(max, k);
  Sym open = cfg_.byte('['), close = cfg_.byte(']');
  if (max >= 0 && min > max)
    return cfg_.nothing();
  int64_t chainEnd = max >= 0 ? max : std::max(k, min); // REST(i) for i >= chainEnd is fixed
  if (chainEnd > kMaxChain)
    return Status::error(name + ": array bounds need a chain of " + std::to_string(chainEnd) +
                         " rules (at most " + std::to_string(kMaxChain) + ")");
  auto elem = [&](int64_t i) { return i < k ? elements[size_t(i)] : rest; };
  std::vector<Sym> comma = cat({w, {cfg_.byte(',')}, w});
  // REST(chainEnd): nothing more when bounded, else any number of `rest`.
  Sym tail = max >= 0 ? cfg_.empty()
                      : cfg_.repeat(cfg_.sequence(cat({comma, {rest}}), name + " , item"), 0, -1,
                                    name + " items");
  for (int64_t i = chainEnd - 1; i >= 1; --i) {
    std::vector<std::vector<Sym>> alts;
    if (i >= min)
      alts.push_back({});
    alts.push_back(cat({comma, {elem(i), tail}}));
    tail = cfg_.choice(std::move(alts), name + " items");
  }
  std::vector<std::vector<Sym>> alts;
  if (min == 0)
    alts.push_back(cat({{open}, w, {close}}));
  if (max != 0 && (k > 0 || rest >= 0))
    alts.push_back(cat({{open}, w, {elem(0), tail}, w, {close}}));
  if (alts.empty())
    return cfg_.nothing();
  return cfg_.choice(std::move(alts), name);
}

} // namespace fm::grammar
