// Grammar pieces for JSON text in either mode: whitespace, string characters and their escapes,
// numbers, literals, objects and arrays. The schema compiler assembles values from these.
#pragma once

#include "fm/grammar.h"
#include "grammar/CharNfa.h"
#include "grammar/Cfg.h"
#include "grammar/Json.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fm::grammar {

class JsonRules {
public:
  JsonRules(Cfg &cfg, GrammarMode mode);

  bool check() const { return mode_ == GrammarMode::Check; }
  /// JSON whitespace in Check mode; nothing in Generate mode (returns the symbols to splice).
  std::vector<Sym> ws();

  /// One character of `set` inside a JSON string: raw UTF-8 where JSON allows it, else an
  /// escape; Check mode admits every spelling (\/, \u00e9 in either case, surrogate pairs).
  Sym stringChar(const CpSet &set);
  /// The same as alternatives to splice into a rule.
  const std::vector<std::vector<Sym>> &stringCharAlts(const CpSet &set);
  /// A whole JSON string ("..." with quotes) whose decoded value `content` accepts.
  Sym string(const CharNfa &content, const std::string &name);
  Sym anyString();
  /// Exactly the string `value` (its JSON spelling(s)).
  Sym stringLiteral(const std::string &value);

  /// A number (integerOnly: integers; Check mode accepts 1.0 and 1e2 there) within optional
  /// bounds; with a bound, the spellings without exponent.
  Expected<Sym> number(bool integerOnly, const std::optional<std::pair<Decimal, bool>> &lower,
                       const std::optional<std::pair<Decimal, bool>> &upper);

  /// Any JSON value.
  Sym anyValue();
  /// The JSON value `v` (Check mode: any whitespace, member order and number spelling).
  Expected<Sym> literal(const JsonValue &v);

  /// An object. Generate mode writes `members` in order (the optional ones may be left out),
  /// then extra members; Check mode admits any order, each known key at most once where that
  /// can be tracked. `extraKey` spells the keys of extra members, `extraValue` their values
  /// (extraKey < 0: none allowed).
  struct Member {
    std::string key;
    Sym value;
    bool required;
  };
  Expected<Sym> object(const std::vector<Member> &members, Sym extraKey, Sym extraValue,
                       const std::string &name);
  /// A key not among `known` (for additionalProperties next to properties).
  Sym keyExcept(const std::vector<std::string> &known);

  /// An array: elements[i] for the first elements.size() positions, then `rest` (< 0: no more),
  /// with min..max elements (max < 0: unbounded).
  Expected<Sym> array(const std::vector<Sym> &elements, Sym rest, int64_t min, int64_t max,
                      const std::string &name);

  Cfg &cfg() { return cfg_; }

private:
  Sym hex4(uint32_t lo, uint32_t hi, bool lowerOnly);
  CharEncoder rawEncoder();
  Expected<Sym> regexSym(const std::string &regex, const std::string &name);

  Cfg &cfg_;
  GrammarMode mode_;
  Sym ws_ = -1, anyString_ = -1, anyValue_ = -1;
  std::map<CpSet, Sym> chars_;
  std::map<CpSet, std::vector<std::vector<Sym>>> charAlts_;
  std::map<std::string, Sym> regexes_;
};

} // namespace fm::grammar
