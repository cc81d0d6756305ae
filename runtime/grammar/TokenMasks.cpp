// The per-position token cache and its computation by one trie walk with an unknown context.
#include "grammar/TokenMasks.h"

#include <algorithm>
#include <numeric>

namespace fm::grammar {

VocabTrie VocabTrie::build(std::vector<std::pair<std::string, int32_t>> entries) {
  std::sort(entries.begin(), entries.end());
  VocabTrie t;
  t.byte.push_back(0);
  t.depth.push_back(0);
  t.end.push_back(0);
  std::vector<std::vector<int32_t>> tokens(1);
  std::vector<int32_t> path{0}; // node of each prefix length of the previous entry
  std::string prev;
  for (const auto &[bytes, id] : entries) {
    if (bytes.empty())
      continue;
    size_t common = 0;
    while (common < prev.size() && common < bytes.size() && prev[common] == bytes[common])
      ++common;
    path.resize(common + 1);
    for (size_t k = common; k < bytes.size(); ++k) {
      t.byte.push_back(uint8_t(bytes[k]));
      t.depth.push_back(uint16_t(std::min<size_t>(k + 1, 65535)));
      t.end.push_back(0);
      tokens.emplace_back();
      path.push_back(int32_t(t.byte.size() - 1));
    }
    tokens[path[bytes.size()]].push_back(id);
    t.maxDepth = std::max<uint16_t>(t.maxDepth, uint16_t(std::min<size_t>(bytes.size(), 65535)));
    prev = bytes;
  }
  // Subtree ends: the next node at the same or a smaller depth.
  size_t n = t.byte.size();
  std::vector<int32_t> open;
  for (size_t i = 0; i < n; ++i) {
    while (!open.empty() && t.depth[open.back()] >= t.depth[i]) {
      t.end[open.back()] = int32_t(i);
      open.pop_back();
    }
    open.push_back(int32_t(i));
  }
  for (int32_t o : open)
    t.end[o] = int32_t(n);
  t.tokBegin.resize(n + 1);
  for (size_t i = 0; i < n; ++i) {
    t.tokBegin[i] = int32_t(t.tokIds.size());
    t.tokIds.insert(t.tokIds.end(), tokens[i].begin(), tokens[i].end());
  }
  t.tokBegin[n] = int32_t(t.tokIds.size());
  return t;
}

int32_t MemoTrieWalker::intern(StackSet s) {
  std::sort(s.tops.begin(), s.tops.end());
  std::vector<int32_t> key = s.tops;
  key.push_back(s.accepting | (s.escaped << 1));
  for (uint64_t w : s.escapeFollow.w) {
    key.push_back(int32_t(uint32_t(w)));
    key.push_back(int32_t(uint32_t(w >> 32)));
  }
  auto it = ids_.find(key);
  if (it != ids_.end())
    return it->second;
  int32_t id = int32_t(states_.size());
  states_.push_back(std::move(s));
  ids_.emplace(std::move(key), id);
  return id;
}

size_t VocabTrie::memoryBytes() const {
  return byte.size() * (1 + 2 + 4 + 4) + tokIds.size() * 4;
}

size_t PositionMask::memoryBytes() const {
  return acceptedIds.size() * 4 + acceptedBits.size() * 4 + suffixes.memoryBytes();
}

MaskCache::MaskCache(Grammar grammar, Vocabulary vocab)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)),
      entries_(grammar_.compiled().syms.size()) {
  eosFlag_.assign(vocab_.tokens.size(), 0);
  for (int32_t e : vocab_.eos)
    eosFlag_[size_t(e)] = 1;
  std::vector<std::pair<std::string, int32_t>> entries;
  for (size_t i = 0; i < vocab_.tokens.size(); ++i)
    if (!eosFlag_[i] && !vocab_.tokens[i].empty())
      entries.push_back({vocab_.tokens[i], int32_t(i)});
  trie_ = VocabTrie::build(std::move(entries));
  for (auto &e : entries_)
    e.store(nullptr, std::memory_order_relaxed);
}

bool MaskCache::isEos(int32_t token) const {
  return token >= 0 && size_t(token) < eosFlag_.size() && eosFlag_[size_t(token)];
}

std::unique_ptr<PositionMask> MaskCache::compute(int32_t pos) {
  const CompiledGrammar &g = grammar_.compiled();
  StackArena arena;
  Engine engine(g, arena);
  StackSet init;
  engine.closeAt(pos, StackArena::kUnknown, init);

  std::vector<char> accepted(vocab_.tokens.size(), 0);
  std::vector<std::pair<int32_t, uint16_t>> uncertain; // (token, bytes consumed in the frame)
  MemoTrieWalker walker;
  const VocabTrie &t = trie_;
  // A token is accepted here when a path consumes it inside the frame (or ends the frame
  // exactly at its end). Otherwise, every earlier point where a path left the frame (escaped)
  // makes it depend on the stack below, with the rest of its bytes: recorded per prefix depth.
  // A path that leaves the frame after k bytes matters only if byte k can follow there at
  // all (the FOLLOW set of the rules that ended); that prunes most entries, e.g. a string's
  // body can only be followed by its closing quote.
  std::vector<uint32_t> escapesAbove(size_t(t.maxDepth) + 2, 0); // escaped levels 1..d
  std::vector<uint8_t> path(size_t(t.maxDepth) + 2, 0);           // path[k]: byte at depth k
  std::vector<uint16_t> depths;
  auto escapedDepths = [&](uint16_t below) {
    depths.clear();
    for (uint16_t k = 1; k < below; ++k)
      if (walker.level(k).escaped && walker.level(k).escapeFollow.test(path[k + 1]))
        depths.push_back(k);
  };
  walker.walk(
      engine, t, init,
      [&](size_t i, const StackSet &st) {
        uint16_t d = t.depth[i];
        path[d] = t.byte[i];
        escapesAbove[d] = escapesAbove[d - 1] + (st.escaped ? 1 : 0);
        if (t.tokBegin[i] == t.tokBegin[i + 1])
          return;
        if (!st.tops.empty() || st.escaped) {
          for (int32_t k = t.tokBegin[i]; k < t.tokBegin[i + 1]; ++k)
            accepted[size_t(t.tokIds[k])] = 1;
        } else if (escapesAbove[d - 1]) {
          escapedDepths(d);
          for (int32_t k = t.tokBegin[i]; k < t.tokBegin[i + 1]; ++k)
            for (uint16_t e : depths)
              uncertain.push_back({t.tokIds[k], e});
        }
      },
      [&](size_t i) {
        uint16_t d = t.depth[i];
        if (!escapesAbove[d - 1])
          return;
        path[d] = t.byte[i];
        escapedDepths(d);
        if (depths.empty())
          return;
        for (int32_t j = int32_t(i); j < t.end[i]; ++j)
          for (int32_t k = t.tokBegin[j]; k < t.tokBegin[j + 1]; ++k)
            for (uint16_t e : depths)
              uncertain.push_back({t.tokIds[k], e});
      });

  auto pm = std::make_unique<PositionMask>();
  size_t count = size_t(std::count(accepted.begin(), accepted.end(), 1));
  if (count * 64 > accepted.size()) {
    pm->acceptedBits.assign(maskWords(), 0);
    for (size_t i = 0; i < accepted.size(); ++i)
      if (accepted[i])
        pm->acceptedBits[i >> 5] |= 1u << (i & 31);
  } else {
    for (size_t i = 0; i < accepted.size(); ++i)
      if (accepted[i])
        pm->acceptedIds.push_back(int32_t(i));
  }
  std::vector<std::pair<std::string, int32_t>> rest;
  std::sort(uncertain.begin(), uncertain.end());
  uncertain.erase(std::unique(uncertain.begin(), uncertain.end()), uncertain.end());
  for (auto [tok, off] : uncertain)
    if (!accepted[size_t(tok)])
      rest.push_back({vocab_.tokens[size_t(tok)].substr(off), tok});
  if (!rest.empty())
    pm->suffixes = VocabTrie::build(std::move(rest));
  return pm;
}

const PositionMask &MaskCache::entry(int32_t pos) {
  PositionMask *p = entries_[size_t(pos)].load(std::memory_order_acquire);
  if (p)
    return *p;
  std::lock_guard<std::mutex> lock(mu_);
  p = entries_[size_t(pos)].load(std::memory_order_relaxed);
  if (p)
    return *p;
  owned_.push_back(compute(pos));
  p = owned_.back().get();
  entries_[size_t(pos)].store(p, std::memory_order_release);
  return *p;
}

size_t MaskCache::precompute() {
  // Every terminal position reachable from the start can become a stack top.
  const CompiledGrammar &g = grammar_.compiled();
  size_t filled = 0;
  if (g.empty)
    return 0;
  std::vector<char> reach(g.ruleCount(), 0);
  std::vector<int32_t> todo{g.syms[size_t(g.start)]};
  reach[size_t(g.syms[size_t(g.start)])] = 1;
  while (!todo.empty()) {
    int32_t r = todo.back();
    todo.pop_back();
    for (int32_t a = g.altBegin[r]; a < g.altBegin[r + 1]; ++a)
      for (int32_t p = g.altStart[a]; g.syms[p] != kEnd; ++p) {
        Sym s = g.syms[p];
        if (isTerminal(s)) {
          if (!entries_[size_t(p)].load(std::memory_order_acquire)) {
            entry(p);
            ++filled;
          }
        } else if (!reach[size_t(s)]) {
          reach[size_t(s)] = 1;
          todo.push_back(s);
        }
      }
  }
  return filled;
}

size_t MaskCache::cachedPositions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return owned_.size();
}

size_t MaskCache::cacheBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t total = 0;
  for (const auto &p : owned_)
    total += p->memoryBytes();
  return total;
}

} // namespace fm::grammar
