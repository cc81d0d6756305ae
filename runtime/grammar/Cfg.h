// The byte-level context-free grammar every front end (JSON Schema, GBNF, regex) builds, and its
// compiled, flattened form that the pushdown matcher runs.
#pragma once

#include "fm/status.h"
#include "grammar/Unicode.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace fm::grammar {

/// 256 bits: the bytes a terminal admits.
struct ByteSet {
  std::array<uint64_t, 4> w{};
  void set(uint8_t b) { w[b >> 6] |= uint64_t(1) << (b & 63); }
  void setRange(uint8_t lo, uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b)
      set(uint8_t(b));
  }
  bool test(uint8_t b) const { return (w[b >> 6] >> (b & 63)) & 1; }
  bool empty() const { return !(w[0] | w[1] | w[2] | w[3]); }
  bool operator<(const ByteSet &o) const { return w < o.w; }
  bool operator==(const ByteSet &o) const { return w == o.w; }
};

/// A symbol in an alternative: a rule id (>= 0) or a terminal (terminalSym(i) < 0).
using Sym = int32_t;
constexpr Sym terminalSym(int32_t index) { return -index - 2; }
constexpr int32_t terminalIndex(Sym s) { return -s - 2; }
constexpr bool isTerminal(Sym s) { return s <= -2; }
/// Ends every alternative in the flattened form.
constexpr Sym kEnd = -1;

/// A grammar under construction: rules with alternatives of symbols. Helpers build the shapes
/// front ends need (literals, code-point sets as UTF-8, repetition) without left recursion.
class Cfg {
public:
  int32_t addRule(std::string name);
  void addAlt(int32_t rule, std::vector<Sym> seq);
  size_t ruleCount() const { return rules_.size(); }
  const std::string &ruleName(int32_t r) const { return rules_[r].name; }

  /// An interned terminal.
  Sym terminal(const ByteSet &set);
  Sym byte(uint8_t b);
  /// A rule spelling exactly `bytes` (a terminal when it is one byte).
  Sym literal(std::string_view bytes);
  /// The UTF-8 spellings of one code point of `set` as alternatives of terminals, for callers
  /// that splice them into their own rules (so a character loop stays in one frame).
  const std::vector<std::vector<Sym>> &utf8Alts(const CpSet &set);
  /// The same as one rule (or one terminal), interned by set.
  Sym utf8Char(const CpSet &set);
  /// rule ::= seq (one alternative), or the symbol itself for a one-symbol sequence.
  Sym sequence(std::vector<Sym> seq, const std::string &name);
  /// rule ::= a | b | ...
  Sym choice(std::vector<std::vector<Sym>> alts, const std::string &name);
  /// x{min,max}; max < 0 means unbounded. Never builds left recursion (x* is R ::= x R | ε).
  Sym repeat(Sym x, int64_t min, int64_t max, const std::string &name);
  /// A rule that admits nothing (no alternatives).
  Sym nothing();
  /// The empty string.
  Sym empty();

  int32_t root = -1;

  struct Rule {
    std::string name;
    std::vector<std::vector<Sym>> alts;
  };
  const std::vector<Rule> &rules() const { return rules_; }
  const std::vector<ByteSet> &terminals() const { return terminals_; }

private:
  std::vector<Rule> rules_;
  std::vector<ByteSet> terminals_;
  std::map<ByteSet, Sym> terminalIds_;
  std::map<std::string, Sym> literals_;
  std::map<CpSet, Sym> chars_;
  std::map<CpSet, std::vector<std::vector<Sym>>> charAlts_;
  std::map<std::tuple<Sym, int64_t, int64_t>, Sym> repeats_;
  Sym nothing_ = -1, empty_ = -1;
};

/// The flattened grammar the matcher runs. Every alternative is a run of symbols in `syms`
/// closed by kEnd; a position is an index into `syms`. Position `start` holds the call of the
/// root rule, so the matcher starts by closing over it.
struct CompiledGrammar {
  std::vector<Sym> syms;
  std::vector<int32_t> altBegin; // rule r's alternatives: altStart[altBegin[r] .. altBegin[r+1])
  std::vector<int32_t> altStart;
  std::vector<ByteSet> terminals;
  std::vector<std::string> ruleNames;
  int32_t start = 0;
  bool empty = false; // the root rule admits no string
  /// The rule each position belongs to, and the bytes that can follow each rule anywhere (its
  /// FOLLOW set): when a frame returns into an unknown context, only those bytes can come next.
  std::vector<int32_t> posRule;
  std::vector<ByteSet> follow;

  size_t ruleCount() const { return ruleNames.size(); }
};

/// Checks and flattens: drops alternatives that can never finish (unproductive) and rules the
/// root cannot reach, and refuses left recursion (a rule that can call itself before consuming
/// a byte), which a top-down matcher cannot run; `what` names the source in that error.
Expected<CompiledGrammar> compileCfg(const Cfg &cfg, const std::string &what);

} // namespace fm::grammar
