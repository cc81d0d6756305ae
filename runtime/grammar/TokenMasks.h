// Token masks: the vocabulary as a byte trie, the per-position cache of which tokens a stack
// top accepts on its own, and the walk that settles the rest against the real stack.
#pragma once

#include "fm/grammar.h"
#include "grammar/Engine.h"

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace fm::grammar {

/// Byte strings with token ids, as a trie in preorder: node i's subtree is [i, end[i]), so a
/// walk skips a dead prefix's subtree in one step. Node 0 is the empty prefix.
struct VocabTrie {
  std::vector<uint8_t> byte;
  std::vector<uint16_t> depth;
  std::vector<int32_t> end;
  std::vector<int32_t> tokBegin; // tokens ending at node i: tokIds[tokBegin[i] .. tokBegin[i+1])
  std::vector<int32_t> tokIds;
  uint16_t maxDepth = 0;

  static VocabTrie build(std::vector<std::pair<std::string, int32_t>> entries);
  size_t size() const { return byte.size(); }
  size_t memoryBytes() const;
};

/// What one grammar position (a stack top) says about every token on its own.
struct PositionMask {
  /// Accepted whatever lies below the top: as sorted ids when few, else as a bitset.
  std::vector<int32_t> acceptedIds;
  std::vector<uint32_t> acceptedBits;
  /// Tokens whose bytes run past the end of the top frame, keyed by the remainder that the
  /// frames below must accept (one entry per way the frame can end inside the token).
  VocabTrie suffixes;
  size_t memoryBytes() const;
};

/// Depth-first walk of `trie` from `init`, calling onNode(i, state) for every node whose
/// prefix leaves a live state. Frames it creates are discarded as it backtracks.
class TrieWalker {
public:
  /// onDead(i) is called for a node whose prefix leaves no live state (its subtree is skipped).
  template <typename OnNode, typename OnDead>
  void walk(Engine &engine, const VocabTrie &trie, const StackSet &init, OnNode &&onNode,
            OnDead &&onDead) {
    StackArena &arena = engine.arena();
    if (levels_.size() < size_t(trie.maxDepth) + 2) {
      levels_.resize(size_t(trie.maxDepth) + 2);
      marks_.resize(size_t(trie.maxDepth) + 2);
    }
    levels_[0] = init;
    marks_[1] = arena.size();
    size_t n = trie.size();
    for (size_t i = 1; i < n;) {
      uint16_t d = trie.depth[i];
      arena.truncate(marks_[d]);
      engine.step(levels_[d - 1], trie.byte[i], levels_[d]);
      marks_[d + 1] = arena.size();
      if (!levels_[d].alive()) {
        onDead(i);
        i = size_t(trie.end[i]);
        continue;
      }
      onNode(i, levels_[d]);
      ++i;
    }
    arena.truncate(marks_[1]);
  }
  template <typename OnNode>
  void walk(Engine &engine, const VocabTrie &trie, const StackSet &init, OnNode &&onNode) {
    walk(engine, trie, init, onNode, [](size_t) {});
  }
  /// The state after the first d bytes of the current node's prefix.
  const StackSet &level(size_t d) const { return levels_[d]; }

private:
  std::vector<StackSet> levels_;
  std::vector<size_t> marks_;
};

/// The same walk for cache computation over the whole vocabulary: states are interned and
/// every (state, byte) step is computed once, so the many prefixes that lead to one state
/// (every character inside a string body) cost a table lookup each.
class MemoTrieWalker {
public:
  template <typename OnNode, typename OnDead>
  void walk(Engine &engine, const VocabTrie &trie, const StackSet &init, OnNode &&onNode,
            OnDead &&onDead) {
    path_.assign(size_t(trie.maxDepth) + 2, 0);
    path_[0] = intern(init);
    size_t n = trie.size();
    StackSet next;
    for (size_t i = 1; i < n;) {
      uint16_t d = trie.depth[i];
      int32_t from = path_[d - 1];
      uint64_t key = (uint64_t(uint32_t(from)) << 8) | trie.byte[i];
      auto it = steps_.find(key);
      int32_t to;
      if (it != steps_.end()) {
        to = it->second;
      } else {
        engine.step(states_[size_t(from)], trie.byte[i], next);
        to = intern(next);
        steps_.emplace(key, to);
      }
      path_[d] = to;
      const StackSet &st = states_[size_t(to)];
      if (!st.alive()) {
        onDead(i);
        i = size_t(trie.end[i]);
        continue;
      }
      onNode(i, st);
      ++i;
    }
  }
  /// The state after the first d bytes of the current node's prefix.
  const StackSet &level(size_t d) const { return states_[size_t(path_[d])]; }

private:
  int32_t intern(StackSet s);
  std::deque<StackSet> states_;
  std::map<std::vector<int32_t>, int32_t> ids_;
  std::unordered_map<uint64_t, int32_t> steps_;
  std::vector<int32_t> path_;
};

/// The shared mask cache of a grammar over a vocabulary (TokenMasker's implementation).
class MaskCache {
public:
  MaskCache(Grammar grammar, Vocabulary vocab);

  /// The entry of a terminal position, computed on first use (thread-safe).
  const PositionMask &entry(int32_t pos);
  size_t precompute();
  size_t cachedPositions() const;
  size_t cacheBytes() const;

  const Grammar &grammar() const { return grammar_; }
  const Vocabulary &vocab() const { return vocab_; }
  int32_t vocabSize() const { return int32_t(vocab_.tokens.size()); }
  size_t maskWords() const { return (vocab_.tokens.size() + 31) / 32; }
  bool isEos(int32_t token) const;

private:
  std::unique_ptr<PositionMask> compute(int32_t pos);

  Grammar grammar_;
  Vocabulary vocab_;
  VocabTrie trie_;
  std::vector<char> eosFlag_;
  mutable std::mutex mu_;
  std::vector<std::atomic<PositionMask *>> entries_;
  std::vector<std::unique_ptr<PositionMask>> owned_;
};

} // namespace fm::grammar
