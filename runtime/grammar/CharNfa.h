// Automata over code points: what regexes, string lengths and formats compile to before they
// become grammar rules. Strings inside JSON need them at the character level, because a
// pattern constrains the decoded string while the grammar spells its JSON escapes.
#pragma once

#include "grammar/Cfg.h"
#include "grammar/Unicode.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fm::grammar {

/// A nondeterministic automaton whose edges carry code-point sets (or epsilon).
struct CharNfa {
  struct Edge {
    int32_t to;
    int32_t set; // index into sets; -1 = epsilon
  };
  int32_t start = 0;
  std::vector<std::vector<Edge>> out;
  std::vector<char> accept;
  std::vector<CpSet> sets;

  int32_t addState(bool accepting = false);
  void addEdge(int32_t from, int32_t to, const CpSet &set);
  void addEps(int32_t from, int32_t to);
  size_t stateCount() const { return out.size(); }
  /// Whether the language is empty.
  bool emptyLanguage() const;
};

/// Epsilon-free equivalent, with states that are unreachable or cannot reach acceptance
/// removed, and edges to the same target merged.
CharNfa removeEpsilons(const CharNfa &nfa);
/// The product automaton of two epsilon-free automata: strings both accept.
CharNfa intersect(const CharNfa &a, const CharNfa &b);
/// The subset construction, if it stays within maxStates; else the input (still valid).
CharNfa determinize(const CharNfa &nfa, size_t maxStates);
/// Whether an epsilon-free automaton accepts the code points.
bool nfaMatches(const CharNfa &nfa, const std::u32string &text);

/// Strings of min..max code points of `chars` (max < 0: unbounded).
CharNfa lengthNfa(int64_t min, int64_t max, const CpSet &chars);
/// Exactly the string `text`.
CharNfa literalNfa(const std::u32string &text);

/// The spellings of one character of a set, as alternatives spliced into the state rules.
using CharEncoder = std::function<const std::vector<std::vector<Sym>> &(const CpSet &)>;

/// Emits an epsilon-free automaton as right-linear rules (state q: q ::= c q' | ... | ε), each
/// character spelled by `encode` (raw UTF-8, or JSON-string escapes) inline, so a run of
/// characters stays in one stack frame. Returns the start rule.
Sym emitNfa(const CharNfa &nfa, Cfg &cfg, const CharEncoder &encode, const std::string &name);

} // namespace fm::grammar
