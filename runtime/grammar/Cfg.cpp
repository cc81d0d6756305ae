// Building, checking and flattening the byte-level grammar.
#include "grammar/Cfg.h"

#include <algorithm>

namespace fm::grammar {

int32_t Cfg::addRule(std::string name) {
  rules_.push_back({std::move(name), {}});
  return int32_t(rules_.size() - 1);
}

void Cfg::addAlt(int32_t rule, std::vector<Sym> seq) {
  rules_[rule].alts.push_back(std::move(seq));
}

Sym Cfg::terminal(const ByteSet &set) {
  auto it = terminalIds_.find(set);
  if (it != terminalIds_.end())
    return it->second;
  terminals_.push_back(set);
  Sym s = terminalSym(int32_t(terminals_.size() - 1));
  terminalIds_[set] = s;
  return s;
}

Sym Cfg::byte(uint8_t b) {
  ByteSet s;
  s.set(b);
  return terminal(s);
}

Sym Cfg::literal(std::string_view bytes) {
  if (bytes.size() == 1)
    return byte(uint8_t(bytes[0]));
  std::string key(bytes);
  auto it = literals_.find(key);
  if (it != literals_.end())
    return it->second;
  std::vector<Sym> seq;
  for (char c : bytes)
    seq.push_back(byte(uint8_t(c)));
  std::string name = "\"";
  for (char c : bytes)
    name += (uint8_t(c) >= 0x20 && uint8_t(c) < 0x7F) ? std::string(1, c) : std::string("?");
  name += "\"";
  int32_t r = addRule(name);
  addAlt(r, std::move(seq));
  literals_[key] = r;
  return r;
}

const std::vector<std::vector<Sym>> &Cfg::utf8Alts(const CpSet &set) {
  auto it = charAlts_.find(set);
  if (it != charAlts_.end())
    return it->second;
  std::vector<std::vector<Sym>> alts;
  // The one-byte families merge into one terminal: fewer parallel stacks.
  ByteSet ascii;
  for (const ByteRangeSeq &seq : utf8Sequences(set)) {
    if (seq.size() == 1) {
      ascii.setRange(seq[0].first, seq[0].second);
      continue;
    }
    std::vector<Sym> alt;
    for (auto [lo, hi] : seq) {
      ByteSet b;
      b.setRange(lo, hi);
      alt.push_back(terminal(b));
    }
    alts.push_back(std::move(alt));
  }
  if (!ascii.empty())
    alts.insert(alts.begin(), std::vector<Sym>{terminal(ascii)});
  return charAlts_[set] = std::move(alts);
}

Sym Cfg::utf8Char(const CpSet &set) {
  auto it = chars_.find(set);
  if (it != chars_.end())
    return it->second;
  std::vector<std::vector<Sym>> alts = utf8Alts(set);
  Sym result = alts.empty() ? nothing() : choice(std::move(alts), "char");
  chars_[set] = result;
  return result;
}

Sym Cfg::sequence(std::vector<Sym> seq, const std::string &name) {
  if (seq.size() == 1)
    return seq[0];
  int32_t r = addRule(name);
  addAlt(r, std::move(seq));
  return r;
}

Sym Cfg::choice(std::vector<std::vector<Sym>> alts, const std::string &name) {
  if (alts.size() == 1 && alts[0].size() == 1)
    return alts[0][0];
  int32_t r = addRule(name);
  for (auto &a : alts)
    addAlt(r, std::move(a));
  return r;
}

Sym Cfg::nothing() {
  if (nothing_ < 0)
    nothing_ = addRule("nothing");
  return nothing_;
}

Sym Cfg::empty() {
  if (empty_ < 0) {
    empty_ = addRule("empty");
    addAlt(empty_, {});
  }
  return empty_;
}

Sym Cfg::repeat(Sym x, int64_t min, int64_t max, const std::string &name) {
  auto key = std::make_tuple(x, min, max);
  auto it = repeats_.find(key);
  if (it != repeats_.end())
    return it->second;
  Sym tail;
  // Splice a small all-terminal rule (a UTF-8 character class) into the loop, so the loop's
  // stack top stays one frame and tokens spanning several characters cache as accepted.
  std::vector<std::vector<Sym>> body{{x}};
  if (!isTerminal(x) && x >= 0 && rules_[x].alts.size() <= 16 &&
      std::all_of(rules_[x].alts.begin(), rules_[x].alts.end(), [](const std::vector<Sym> &a) {
        return !a.empty() && std::all_of(a.begin(), a.end(), isTerminal);
      }))
    body = rules_[x].alts;
  if (max < 0) {
    int32_t star = addRule(name + "*");
    for (auto alt : body) {
      alt.push_back(star);
      addAlt(star, std::move(alt));
    }
    addAlt(star, {});
    tail = star;
  } else {
    tail = empty();
    for (int64_t k = 0; k < max - min; ++k) {
      int32_t opt = addRule(name + "?");
      for (auto alt : body) {
        alt.push_back(tail);
        addAlt(opt, std::move(alt));
      }
      addAlt(opt, {});
      tail = opt;
    }
  }
  std::vector<Sym> seq(size_t(std::max<int64_t>(min, 0)), x);
  seq.push_back(tail);
  Sym r = sequence(std::move(seq), name);
  repeats_[key] = r;
  return r;
}

namespace {

void orInto(ByteSet &a, const ByteSet &b) {
  for (int k = 0; k < 4; ++k)
    a.w[k] |= b.w[k];
}

// FIRST and nullable per rule, then FOLLOW, each to a fixpoint over the flattened form.
void computeFollow(CompiledGrammar &g) {
  size_t nr = g.ruleCount();
  g.posRule.assign(g.syms.size(), -1);
  for (size_t r = 0; r < nr; ++r)
    for (int32_t a = g.altBegin[r]; a < g.altBegin[r + 1]; ++a)
      for (int32_t p = g.altStart[size_t(a)];; ++p) {
        g.posRule[size_t(p)] = int32_t(r);
        if (g.syms[size_t(p)] == kEnd)
          break;
      }
  std::vector<ByteSet> first(nr);
  std::vector<char> nullable(nr, 0);
  auto firstOfRest = [&](int32_t p, ByteSet &out) { // FIRST of syms[p..]; true if nullable
    for (;; ++p) {
      Sym s = g.syms[size_t(p)];
      if (s == kEnd)
        return true;
      if (isTerminal(s)) {
        orInto(out, g.terminals[size_t(terminalIndex(s))]);
        return false;
      }
      orInto(out, first[size_t(s)]);
      if (!nullable[size_t(s)])
        return false;
    }
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < nr; ++r)
      for (int32_t a = g.altBegin[r]; a < g.altBegin[r + 1]; ++a) {
        ByteSet f = first[r];
        bool n = firstOfRest(g.altStart[size_t(a)], f);
        if (!(f == first[r]) || (n && !nullable[r])) {
          first[r] = f;
          nullable[r] = nullable[r] || n;
          changed = true;
        }
      }
  }
  g.follow.assign(nr, ByteSet{});
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < nr; ++r)
      for (int32_t a = g.altBegin[r]; a < g.altBegin[r + 1]; ++a)
        for (int32_t p = g.altStart[size_t(a)]; g.syms[size_t(p)] != kEnd; ++p) {
          Sym s = g.syms[size_t(p)];
          if (isTerminal(s))
            continue;
          ByteSet f = g.follow[size_t(s)];
          if (firstOfRest(p + 1, f))
            orInto(f, g.follow[r]);
          if (!(f == g.follow[size_t(s)])) {
            g.follow[size_t(s)] = f;
            changed = true;
          }
        }
  }
}

} // namespace

Expected<CompiledGrammar> compileCfg(const Cfg &cfg, const std::string &what) {
  const auto &rules = cfg.rules();
  const auto &terms = cfg.terminals();
  size_t n = rules.size();
  if (cfg.root < 0 || size_t(cfg.root) >= n)
    return Status::error(what + ": no root rule");

  // Productive rules: some alternative made only of non-empty terminals and productive rules.
  std::vector<char> productive(n, 0);
  auto symOk = [&](Sym s) {
    return isTerminal(s) ? !terms[terminalIndex(s)].empty() : productive[s] != 0;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (productive[r])
        continue;
      for (const auto &alt : rules[r].alts) {
        if (std::all_of(alt.begin(), alt.end(), symOk)) {
          productive[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }

  CompiledGrammar g;
  g.terminals = terms;
  if (!productive[cfg.root]) {
    // The language is empty: a grammar whose only position accepts nothing.
    g.empty = true;
    g.ruleNames = {rules[cfg.root].name};
    g.altBegin = {0, 0};
    g.syms = {0, kEnd};
    g.start = 0;
    g.posRule = {-1, -1};
    g.follow = {ByteSet{}};
    return g;
  }

  // Keep the productive alternatives; find what the root reaches.
  std::vector<std::vector<const std::vector<Sym> *>> alts(n);
  for (size_t r = 0; r < n; ++r)
    for (const auto &alt : rules[r].alts)
      if (std::all_of(alt.begin(), alt.end(), symOk))
        alts[r].push_back(&alt);
  std::vector<int32_t> newId(n, -1);
  std::vector<int32_t> order;
  std::vector<int32_t> todo{cfg.root};
  newId[cfg.root] = 0;
  order.push_back(cfg.root);
  while (!todo.empty()) {
    int32_t r = todo.back();
    todo.pop_back();
    for (const auto *alt : alts[r])
      for (Sym s : *alt)
        if (!isTerminal(s) && newId[s] < 0) {
          newId[s] = int32_t(order.size());
          order.push_back(s);
          todo.push_back(s);
        }
  }

  // Nullable rules, then left recursion: an edge A -> B when B can start A's alternative.
  size_t m = order.size();
  std::vector<char> nullable(m, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < m; ++i) {
      if (nullable[i])
        continue;
      for (const auto *alt : alts[order[i]]) {
        bool all = std::all_of(alt->begin(), alt->end(),
                               [&](Sym s) { return !isTerminal(s) && nullable[newId[s]]; });
        if (all) {
          nullable[i] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<int32_t>> left(m);
  for (size_t i = 0; i < m; ++i)
    for (const auto *alt : alts[order[i]])
      for (Sym s : *alt) {
        if (isTerminal(s))
          break;
        left[i].push_back(newId[s]);
        if (!nullable[newId[s]])
          break;
      }
  // Iterative DFS (grammars may chain thousands of rules): a grey node seen again is a cycle.
  std::vector<int8_t> color(m, 0);
  std::vector<std::pair<int32_t, size_t>> stack; // (rule, next edge)
  for (size_t root = 0; root < m; ++root) {
    if (color[root])
      continue;
    stack.push_back({int32_t(root), 0});
    color[root] = 1;
    while (!stack.empty()) {
      auto &[v, next] = stack.back();
      if (next == left[v].size()) {
        color[v] = 2;
        stack.pop_back();
        continue;
      }
      int32_t w = left[v][next++];
      if (color[w] == 1) {
        std::string cycle;
        size_t k = 0;
        while (stack[k].first != w)
          ++k;
        for (; k < stack.size(); ++k)
          cycle += "'" + rules[order[stack[k].first]].name + "' -> ";
        cycle += "'" + rules[order[w]].name + "'";
        return Status::error(what + ": left recursion (a rule reaches itself before reading "
                                    "any byte): " + cycle);
      }
      if (color[w] == 0) {
        color[w] = 1;
        stack.push_back({w, 0});
      }
    }
  }

  // Flatten. Position 0 calls the root; the rules follow.
  g.syms = {0, kEnd};
  g.start = 0;
  g.altBegin.push_back(0);
  for (size_t i = 0; i < m; ++i) {
    g.ruleNames.push_back(rules[order[i]].name);
    for (const auto *alt : alts[order[i]]) {
      g.altStart.push_back(int32_t(g.syms.size()));
      for (Sym s : *alt)
        g.syms.push_back(isTerminal(s) ? s : newId[s]);
      g.syms.push_back(kEnd);
    }
    g.altBegin.push_back(int32_t(g.altStart.size()));
  }
  computeFollow(g);
  return g;
}

} // namespace fm::grammar
