// The pushdown matcher over bytes: persistent, hash-consed stacks and the closure that expands
// rule calls and returns until every stack top is a terminal.
#pragma once

#include "grammar/Cfg.h"

#include <cstdint>
#include <vector>

namespace fm::grammar {

/// Stack frames shared between stacks: frame (pos, parent) is one node, so a stack is one node
/// id and two equal stacks have the same id (dedupe by integer compare). Append-only, with a
/// mark/truncate pair for temporary exploration (mask computation walks and discards).
class StackArena {
public:
  /// Below every real stack: reaching it means the root rule completed.
  static constexpr int32_t kBottom = 0;
  /// Stands for "whatever the real stack has below" when a mask cache entry is computed for a
  /// position alone; reaching it means the token's fate depends on that context.
  static constexpr int32_t kUnknown = 1;

  StackArena();
  int32_t node(int32_t pos, int32_t parent);
  int32_t pos(int32_t n) const { return nodes_[n].pos; }
  int32_t parent(int32_t n) const { return nodes_[n].parent; }
  size_t size() const { return nodes_.size(); }
  /// Forgets every node created after size() was `mark`.
  void truncate(size_t mark);

private:
  struct Node {
    int32_t pos, parent;
  };
  void rehash(size_t slots);
  static uint64_t hash(int32_t pos, int32_t parent);
  std::vector<Node> nodes_;
  std::vector<uint32_t> slotOf_; // table slot of each node, for truncate
  std::vector<int32_t> table_;   // node id or -1
  size_t mask_ = 0;
};

/// A matcher state: the stack tops (each at a terminal position), and whether the text so far
/// completes the root (accepting) or, in a cache computation, escaped into the unknown context.
struct StackSet {
  std::vector<int32_t> tops;
  bool accepting = false;
  bool escaped = false;
  /// More than Engine::kMaxLiveStacks stacks were live: an ambiguous grammar whose parses grow
  /// without bound (e.g. `a ::= . a | . b`). The set is then dead, never silently truncated.
  bool overflow = false;
  /// When escaped: the bytes that can follow in any context (FOLLOW of the rules that ended).
  ByteSet escapeFollow;
  bool alive() const { return !tops.empty() || accepting || escaped; }
  void clear() {
    tops.clear();
    accepting = escaped = overflow = false;
    escapeFollow = ByteSet{};
  }
};

/// Steps stack sets over one grammar, creating frames in an arena it is given.
class Engine {
public:
  /// Live stacks a step may leave. Schema- and GBNF-derived grammars stay far below (tens);
  /// the cap bounds a step's work and the arena's growth for a grammar that is exponentially
  /// ambiguous, which would otherwise hang the matcher (found by fuzz.grammar_gbnf).
  static constexpr size_t kMaxLiveStacks = 4096;

  Engine(const CompiledGrammar &g, StackArena &arena) : g_(g), arena_(arena) {}

  /// The state before any byte.
  void initial(StackSet &out);
  /// out = the state after byte `b` from `in` (out is cleared first; may not alias in).
  void step(const StackSet &in, uint8_t b, StackSet &out);
  /// out = the closure of frame `pos` over `parent` (for cache entries: parent kUnknown).
  void closeAt(int32_t pos, int32_t parent, StackSet &out);
  /// out = the state after the frame below a top returns to `parent`.
  void closeNode(int32_t node, StackSet &out);
  /// The bytes some top admits.
  ByteSet nextBytes(const StackSet &s) const;

  const CompiledGrammar &grammar() const { return g_; }
  StackArena &arena() { return arena_; }

private:
  void begin();
  void push(int32_t pos, int32_t parent);
  void run(StackSet &out);
  void runWork(StackSet &out);
  void orFollow(int32_t pos);

  const CompiledGrammar &g_;
  StackArena &arena_;
  std::vector<uint32_t> stamp_;
  uint32_t epoch_ = 0;
  std::vector<int32_t> work_;
  ByteSet follow_;
};

} // namespace fm::grammar
