// Code-point automata: epsilon removal, product, subset construction, emission as rules.
#include "grammar/CharNfa.h"

#include <algorithm>
#include <map>
#include <set>

namespace fm::grammar {

int32_t CharNfa::addState(bool accepting) {
  out.emplace_back();
  accept.push_back(accepting);
  return int32_t(out.size() - 1);
}

void CharNfa::addEdge(int32_t from, int32_t to, const CpSet &set) {
  if (set.empty())
    return;
  sets.push_back(set);
  out[from].push_back({to, int32_t(sets.size() - 1)});
}

void CharNfa::addEps(int32_t from, int32_t to) { out[from].push_back({to, -1}); }

bool CharNfa::emptyLanguage() const {
  std::vector<char> seen(out.size(), 0);
  std::vector<int32_t> todo{start};
  seen[start] = 1;
  while (!todo.empty()) {
    int32_t s = todo.back();
    todo.pop_back();
    if (accept[s])
      return false;
    for (const Edge &e : out[s])
      if (!seen[e.to]) {
        seen[e.to] = 1;
        todo.push_back(e.to);
      }
  }
  return true;
}

namespace {

/// Keeps the states reachable from start that can reach acceptance, and merges parallel
/// edges; the input is epsilon-free.
CharNfa trim(const CharNfa &nfa) {
  size_t n = nfa.stateCount();
  std::vector<char> reach(n, 0), live(n, 0);
  std::vector<int32_t> todo{nfa.start};
  reach[nfa.start] = 1;
  std::vector<std::vector<int32_t>> rev(n);
  while (!todo.empty()) {
    int32_t s = todo.back();
    todo.pop_back();
    for (const auto &e : nfa.out[s]) {
      rev[e.to].push_back(s);
      if (!reach[e.to]) {
        reach[e.to] = 1;
        todo.push_back(e.to);
      }
    }
  }
  for (size_t s = 0; s < n; ++s)
    if (reach[s] && nfa.accept[s]) {
      live[s] = 1;
      todo.push_back(int32_t(s));
    }
  while (!todo.empty()) {
    int32_t s = todo.back();
    todo.pop_back();
    for (int32_t p : rev[s])
      if (!live[p]) {
        live[p] = 1;
        todo.push_back(p);
      }
  }
  CharNfa out;
  std::vector<int32_t> id(n, -1);
  auto idOf = [&](int32_t s) {
    if (id[s] < 0)
      id[s] = out.addState(nfa.accept[s]);
    return id[s];
  };
  out.start = idOf(nfa.start);
  if (!live[nfa.start])
    return out; // empty language: a lone non-accepting start
  for (size_t s = 0; s < n; ++s) {
    if (!live[s] || !reach[s])
      continue;
    std::map<int32_t, CpSet> merged;
    for (const auto &e : nfa.out[s])
      if (live[e.to])
        merged[e.to].add(nfa.sets[e.set]);
    int32_t from = idOf(int32_t(s));
    for (auto &[to, set] : merged)
      out.addEdge(from, idOf(to), set);
  }
  return out;
}

} // namespace

CharNfa removeEpsilons(const CharNfa &nfa) {
  size_t n = nfa.stateCount();
  CharNfa out;
  for (size_t s = 0; s < n; ++s)
    out.addState(false);
  out.start = nfa.start;
  std::vector<int32_t> stack;
  std::vector<uint32_t> seen(n, 0);
  uint32_t epoch = 0;
  for (size_t s = 0; s < n; ++s) {
    ++epoch;
    stack = {int32_t(s)};
    seen[s] = epoch;
    while (!stack.empty()) {
      int32_t q = stack.back();
      stack.pop_back();
      if (nfa.accept[q])
        out.accept[s] = 1;
      for (const auto &e : nfa.out[q]) {
        if (e.set < 0) {
          if (seen[e.to] != epoch) {
            seen[e.to] = epoch;
            stack.push_back(e.to);
          }
        } else {
          out.addEdge(int32_t(s), e.to, nfa.sets[e.set]);
        }
      }
    }
  }
  return trim(out);
}

CharNfa intersect(const CharNfa &a, const CharNfa &b) {
  CharNfa out;
  std::map<std::pair<int32_t, int32_t>, int32_t> ids;
  std::vector<std::pair<int32_t, int32_t>> todo;
  auto idOf = [&](int32_t x, int32_t y) {
    auto it = ids.find({x, y});
    if (it != ids.end())
      return it->second;
    int32_t s = out.addState(a.accept[x] && b.accept[y]);
    ids[{x, y}] = s;
    todo.push_back({x, y});
    return s;
  };
  out.start = idOf(a.start, b.start);
  while (!todo.empty()) {
    auto [x, y] = todo.back();
    todo.pop_back();
    int32_t from = ids[{x, y}];
    for (const auto &ea : a.out[x])
      for (const auto &eb : b.out[y]) {
        CpSet both = a.sets[ea.set].intersect(b.sets[eb.set]);
        if (!both.empty())
          out.addEdge(from, idOf(ea.to, eb.to), both);
      }
  }
  return trim(out);
}

CharNfa determinize(const CharNfa &nfa, size_t maxStates) {
  CharNfa out;
  std::map<std::vector<int32_t>, int32_t> ids;
  std::vector<std::vector<int32_t>> todo;
  auto idOf = [&](std::vector<int32_t> set) {
    auto it = ids.find(set);
    if (it != ids.end())
      return it->second;
    bool acc = std::any_of(set.begin(), set.end(), [&](int32_t s) { return nfa.accept[s]; });
    int32_t s = out.addState(acc);
    ids[set] = s;
    todo.push_back(std::move(set));
    return s;
  };
  out.start = idOf({nfa.start});
  size_t work = 0; // NFA states touched: bounds the time spent on a construction that blows up
  while (!todo.empty()) {
    if (out.stateCount() > maxStates || work > 64 * maxStates + 100000)
      return nfa;
    std::vector<int32_t> cur = std::move(todo.back());
    todo.pop_back();
    work += cur.size();
    int32_t from = ids[cur];
    // Elementary intervals: split the alphabet where any edge set starts or ends.
    std::vector<uint32_t> points;
    std::vector<const CharNfa::Edge *> edges;
    for (int32_t s : cur)
      for (const auto &e : nfa.out[s]) {
        edges.push_back(&e);
        for (auto [lo, hi] : nfa.sets[e.set].ranges()) {
          points.push_back(lo);
          points.push_back(hi + 1);
        }
      }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    std::map<std::vector<int32_t>, CpSet> byTarget;
    for (size_t i = 0; i + 1 < points.size(); ++i) {
      std::vector<int32_t> target;
      for (const auto *e : edges)
        if (nfa.sets[e->set].contains(points[i]))
          target.push_back(e->to);
      if (target.empty())
        continue;
      std::sort(target.begin(), target.end());
      target.erase(std::unique(target.begin(), target.end()), target.end());
      byTarget[target].add(points[i], points[i + 1] - 1);
    }
    for (auto &[target, set] : byTarget)
      out.addEdge(from, idOf(target), set);
  }
  return trim(out);
}

bool nfaMatches(const CharNfa &nfa, const std::u32string &text) {
  std::set<int32_t> cur{nfa.start}, next;
  for (char32_t c : text) {
    next.clear();
    for (int32_t s : cur)
      for (const auto &e : nfa.out[s])
        if (nfa.sets[e.set].contains(uint32_t(c)))
          next.insert(e.to);
    cur.swap(next);
    if (cur.empty())
      return false;
  }
  return std::any_of(cur.begin(), cur.end(), [&](int32_t s) { return nfa.accept[s]; });
}

CharNfa lengthNfa(int64_t min, int64_t max, const CpSet &chars) {
  CharNfa out;
  int64_t last = max < 0 ? min : max;
  for (int64_t i = 0; i <= last; ++i)
    out.addState(i >= min);
  for (int64_t i = 0; i < last; ++i)
    out.addEdge(int32_t(i), int32_t(i + 1), chars);
  if (max < 0)
    out.addEdge(int32_t(last), int32_t(last), chars);
  return out;
}

CharNfa literalNfa(const std::u32string &text) {
  CharNfa out;
  out.addState(text.empty());
  for (size_t i = 0; i < text.size(); ++i) {
    out.addState(i + 1 == text.size());
    out.addEdge(int32_t(i), int32_t(i + 1), CpSet::of(uint32_t(text[i])));
  }
  return out;
}

Sym emitNfa(const CharNfa &nfa, Cfg &cfg, const CharEncoder &encode, const std::string &name) {
  size_t n = nfa.stateCount();
  std::vector<int32_t> rule(n, -1);
  for (size_t s = 0; s < n; ++s)
    rule[s] = cfg.addRule(name);
  for (size_t s = 0; s < n; ++s) {
    for (const auto &e : nfa.out[s]) {
      // A final state with no way on needs no rule call after the character.
      bool sink = nfa.out[e.to].empty() && nfa.accept[e.to];
      for (std::vector<Sym> alt : encode(nfa.sets[e.set])) {
        if (!sink)
          alt.push_back(rule[e.to]);
        cfg.addAlt(rule[s], std::move(alt));
      }
    }
    if (nfa.accept[s])
      cfg.addAlt(rule[s], {});
  }
  return rule[nfa.start];
}

} // namespace fm::grammar
