// Persistent stacks and the closure over rule calls and returns.
#include "grammar/Engine.h"

#include <algorithm>

namespace fm::grammar {

StackArena::StackArena() {
  nodes_ = {{-1, -1}, {-1, -1}}; // kBottom, kUnknown
  slotOf_ = {0, 0};
  rehash(1024);
}

uint64_t StackArena::hash(int32_t pos, int32_t parent) {
  uint64_t k = (uint64_t(uint32_t(pos)) << 32) | uint32_t(parent);
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

void StackArena::rehash(size_t slots) {
  table_.assign(slots, -1);
  mask_ = slots - 1;
  // Reinsert in creation order: a node only ever probes past older nodes, which is what lets
  // truncate() clear slots newest-first.
  for (size_t id = 2; id < nodes_.size(); ++id) {
    size_t s = hash(nodes_[id].pos, nodes_[id].parent) & mask_;
    while (table_[s] >= 0)
      s = (s + 1) & mask_;
    table_[s] = int32_t(id);
    slotOf_[id] = uint32_t(s);
  }
}

int32_t StackArena::node(int32_t pos, int32_t parent) {
  size_t s = hash(pos, parent) & mask_;
  while (true) {
    int32_t id = table_[s];
    if (id < 0)
      break;
    if (nodes_[id].pos == pos && nodes_[id].parent == parent)
      return id;
    s = (s + 1) & mask_;
  }
  int32_t id = int32_t(nodes_.size());
  nodes_.push_back({pos, parent});
  slotOf_.push_back(uint32_t(s));
  table_[s] = id;
  if (nodes_.size() * 2 > table_.size())
    rehash(table_.size() * 2);
  return id;
}

void StackArena::truncate(size_t mark) {
  mark = std::max<size_t>(mark, 2);
  if (mark >= nodes_.size())
    return;
  for (size_t id = nodes_.size(); id > mark; --id)
    table_[slotOf_[id - 1]] = -1;
  nodes_.resize(mark);
  slotOf_.resize(mark);
}

void Engine::begin() {
  if (++epoch_ == 0) {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    epoch_ = 1;
  }
  work_.clear();
  follow_ = ByteSet{};
}

void Engine::push(int32_t pos, int32_t parent) {
  // A frame at the end of its alternative is its parent: return at once.
  if (g_.syms[pos] == kEnd) {
    if (parent == StackArena::kUnknown)
      orFollow(pos);
    work_.push_back(parent);
  } else {
    work_.push_back(arena_.node(pos, parent));
  }
}

void Engine::run(StackSet &out) {
  runWork(out);
  if (out.tops.size() > kMaxLiveStacks) {
    out.clear();
    out.overflow = true;
    return;
  }
  if (out.escaped)
    for (int k = 0; k < 4; ++k)
      out.escapeFollow.w[k] |= follow_.w[k];
}

void Engine::runWork(StackSet &out) {
  const std::vector<Sym> &syms = g_.syms;
  while (!work_.empty()) {
    int32_t n = work_.back();
    work_.pop_back();
    if (size_t(n) >= stamp_.size())
      stamp_.resize(std::max(size_t(n) + 1, stamp_.size() * 2 + 64), 0);
    if (stamp_[n] == epoch_)
      continue;
    stamp_[n] = epoch_;
    if (n == StackArena::kBottom) {
      out.accepting = true;
      continue;
    }
    if (n == StackArena::kUnknown) {
      out.escaped = true;
      continue;
    }
    int32_t pos = arena_.pos(n);
    Sym s = syms[pos];
    if (isTerminal(s)) {
      out.tops.push_back(n);
      if (out.tops.size() > kMaxLiveStacks) { // dead (run): the rest of the closure is moot,
        work_.clear();                        // and can be exponentially large
        return;
      }
    } else if (s == kEnd) {
      if (arena_.parent(n) == StackArena::kUnknown)
        orFollow(pos);
      work_.push_back(arena_.parent(n));
    } else {
      // Call rule s. The return frame is the caller one symbol on, unless that is the end of
      // its alternative: then returning means returning from the caller (a tail call), so
      // loops written as right recursion run in constant stack.
      int32_t parent = arena_.parent(n);
      int32_t ret = syms[pos + 1] == kEnd ? parent : arena_.node(pos + 1, parent);
      for (int32_t a = g_.altBegin[s]; a < g_.altBegin[s + 1]; ++a)
        push(g_.altStart[a], ret);
    }
  }
}

void Engine::orFollow(int32_t pos) {
  int32_t rule = g_.posRule[size_t(pos)];
  if (rule < 0) { // the start position: anything (never reached with an unknown context)
    follow_.w = {~0ull, ~0ull, ~0ull, ~0ull};
    return;
  }
  const ByteSet &f = g_.follow[size_t(rule)];
  for (int k = 0; k < 4; ++k)
    follow_.w[k] |= f.w[k];
}

void Engine::initial(StackSet &out) { closeAt(g_.start, StackArena::kBottom, out); }

void Engine::closeAt(int32_t pos, int32_t parent, StackSet &out) {
  out.clear();
  if (g_.empty)
    return;
  begin();
  push(pos, parent);
  run(out);
}

void Engine::closeNode(int32_t node, StackSet &out) {
  out.clear();
  begin();
  work_.push_back(node);
  run(out);
}

void Engine::step(const StackSet &in, uint8_t b, StackSet &out) {
  out.clear();
  begin();
  const std::vector<Sym> &syms = g_.syms;
  for (int32_t t : in.tops) {
    int32_t pos = arena_.pos(t);
    if (g_.terminals[terminalIndex(syms[pos])].test(b))
      push(pos + 1, arena_.parent(t));
  }
  run(out);
}

ByteSet Engine::nextBytes(const StackSet &s) const {
  ByteSet out;
  for (int32_t t : s.tops) {
    const ByteSet &b = g_.terminals[terminalIndex(g_.syms[arena_.pos(t)])];
    for (int k = 0; k < 4; ++k)
      out.w[k] |= b.w[k];
  }
  return out;
}

} // namespace fm::grammar
