// A recursive-descent parser for ECMA-262 regex syntax and a Thompson construction.
#include "grammar/Regex.h"

#include <string>
#include <vector>

namespace fm::grammar {

namespace {

constexpr int64_t kMaxRepeat = 1000;

struct Node {
  enum Kind { Empty, Set, Concat, Alt, Repeat, Start, End } kind = Empty;
  CpSet set;
  std::vector<int32_t> kids;
  int64_t min = 0, max = 0; // max < 0: unbounded
  size_t offset = 0;
};

CpSet digitSet() { return CpSet::range('0', '9'); }
CpSet wordSet() {
  CpSet s = CpSet::range('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  s.add('_', '_');
  return s;
}
CpSet spaceSet() {
  CpSet s = CpSet::range(0x09, 0x0D);
  for (uint32_t c : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu})
    s.add(c, c);
  s.add(0x2000, 0x200A);
  return s;
}
CpSet dotSet() {
  CpSet s = CpSet::all();
  CpSet lt = CpSet::of('\n');
  lt.add('\r', '\r');
  lt.add(0x2028, 0x2029);
  return s.minus(lt);
}

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Expected<int32_t> parse() {
    // Decode up front so offsets can be reported in bytes and parsing works on code points.
    std::string s(text_);
    for (size_t i = 0; i < s.size();) {
      uint32_t cp;
      size_t at = i;
      if (!decodeUtf8(s, &i, &cp))
        return fail(at, "invalid UTF-8");
      cps_.push_back(cp);
      offs_.push_back(at);
    }
    offs_.push_back(s.size());
    int32_t root = alternation();
    if (!error_.empty())
      return Status::error(error_);
    if (i_ < cps_.size())
      return Status::error(at(i_) + "unmatched ')'");
    return root;
  }

  std::vector<Node> nodes;

private:
  std::string at(size_t i) const {
    return "regex: at offset " + std::to_string(offs_[std::min(i, cps_.size())]) + ": ";
  }
  Status fail(size_t byteOffset, const std::string &what) {
    return Status::error("regex: at offset " + std::to_string(byteOffset) + ": " + what);
  }
  int32_t error(size_t i, const std::string &what) {
    if (error_.empty())
      error_ = at(i) + what;
    return -1;
  }
  bool eof() const { return i_ >= cps_.size(); }
  uint32_t peek(size_t k = 0) const { return i_ + k < cps_.size() ? cps_[i_ + k] : 0; }
  int32_t add(Node n) {
    nodes.push_back(std::move(n));
    return int32_t(nodes.size() - 1);
  }

  int32_t alternation() {
    size_t start = i_;
    std::vector<int32_t> alts{concatenation()};
    while (error_.empty() && !eof() && peek() == '|') {
      ++i_;
      alts.push_back(concatenation());
    }
    if (alts.size() == 1)
      return alts[0];
    Node n;
    n.kind = Node::Alt;
    n.kids = alts;
    n.offset = start;
    return add(n);
  }

  int32_t concatenation() {
    Node n;
    n.kind = Node::Concat;
    n.offset = i_;
    while (error_.empty() && !eof() && peek() != '|' && peek() != ')')
      n.kids.push_back(quantified());
    return add(n);
  }

  // {n}, {n,}, {n,m} at i_: fills min/max and advances; false (i_ unchanged) if it is not one.
  bool braces(int64_t *min, int64_t *max) {
    size_t j = i_ + 1;
    auto number = [&](int64_t *v) {
      size_t from = j;
      *v = 0;
      while (j < cps_.size() && cps_[j] >= '0' && cps_[j] <= '9') {
        *v = std::min<int64_t>(*v * 10 + (cps_[j] - '0'), 1 << 30);
        ++j;
      }
      return j > from;
    };
    if (!number(min))
      return false;
    *max = *min;
    if (j < cps_.size() && cps_[j] == ',') {
      ++j;
      if (!number(max))
        *max = -1;
    }
    if (j >= cps_.size() || cps_[j] != '}')
      return false;
    i_ = j + 1;
    return true;
  }

  int32_t quantified() {
    size_t start = i_;
    int32_t atom = this->atom();
    if (!error_.empty())
      return -1;
    bool assertion = nodes[atom].kind == Node::Start || nodes[atom].kind == Node::End;
    if (eof())
      return atom;
    int64_t min, max;
    uint32_t c = peek();
    size_t qAt = i_;
    if (c == '*')
      min = 0, max = -1, ++i_;
    else if (c == '+')
      min = 1, max = -1, ++i_;
    else if (c == '?')
      min = 0, max = 1, ++i_;
    else if (c == '{' && braces(&min, &max))
      ;
    else
      return atom;
    if (assertion)
      return error(qAt, "nothing to repeat (a quantifier after an anchor)");
    if (max >= 0 && min > max)
      return error(qAt, "numbers out of order in {} quantifier");
    if (min > kMaxRepeat || max > kMaxRepeat)
      return error(qAt, "repetition count above " + std::to_string(kMaxRepeat));
    if (!eof() && peek() == '?')
      ++i_; // lazy: the same language
    Node n;
    n.kind = Node::Repeat;
    n.kids = {atom};
    n.min = min;
    n.max = max;
    n.offset = start;
    atom = add(n);
    // ECMA-262 allows one quantifier per atom (a?{4} is a syntax error).
    int64_t a, b;
    size_t save = i_;
    if (!eof() && (peek() == '*' || peek() == '+' || peek() == '?' ||
                   (peek() == '{' && braces(&a, &b)))) {
      i_ = save;
      return error(i_, "nothing to repeat (two quantifiers in a row)");
    }
    return atom;
  }

  int32_t setNode(CpSet s, size_t offset) {
    Node n;
    n.kind = Node::Set;
    n.set = std::move(s);
    n.offset = offset;
    return add(n);
  }

  int32_t atom() {
    size_t start = i_;
    uint32_t c = peek();
    switch (c) {
    case '(': {
      if (++depth_ > 256)
        return error(i_, "groups nested deeper than 256");
      ++i_;
      if (peek() == '?') {
        if (peek(1) == ':') {
          i_ += 2;
        } else if (peek(1) == '=' || peek(1) == '!') {
          return error(start, "lookahead (?" + std::string(1, char(peek(1))) +
                                  " is not supported");
        } else if (peek(1) == '<' && (peek(2) == '=' || peek(2) == '!')) {
          return error(start, "lookbehind (?<" + std::string(1, char(peek(2))) +
                                  " is not supported");
        } else if (peek(1) == '<') {
          i_ += 2;
          while (!eof() && peek() != '>')
            ++i_;
          if (eof())
            return error(start, "unterminated group name");
          ++i_;
        } else {
          return error(start, "unknown group syntax (?" + std::string(1, char(peek(1))));
        }
      }
      int32_t inner = alternation();
      if (!error_.empty())
        return -1;
      if (eof() || peek() != ')')
        return error(start, "unterminated group '('");
      ++i_;
      --depth_;
      return inner;
    }
    case ')':
      return error(i_, "unmatched ')'");
    case '[':
      return charClass();
    case '.':
      ++i_;
      return setNode(dotSet(), start);
    case '^': {
      ++i_;
      Node n;
    n.kind = Node::Start;
      n.offset = start;
      return add(n);
    }
    case '$': {
      ++i_;
      Node n;
    n.kind = Node::End;
      n.offset = start;
      return add(n);
    }
    case '*':
    case '+':
    case '?':
      return error(i_, "nothing to repeat");
    case '{': {
      int64_t a, b;
      size_t save = i_;
      if (braces(&a, &b)) {
        i_ = save;
        return error(i_, "nothing to repeat");
      }
      ++i_;
      return setNode(CpSet::of('{'), start);
    }
    case '\\': {
      CpSet s;
      if (!escape(false, &s))
        return -1;
      return setNode(s, start);
    }
    default:
      ++i_;
      return setNode(CpSet::of(c), start);
    }
  }

  bool hex(int digits, uint32_t *v) {
    *v = 0;
    for (int k = 0; k < digits; ++k) {
      uint32_t c = peek();
      int d = c >= '0' && c <= '9'   ? int(c - '0')
              : c >= 'a' && c <= 'f' ? int(c - 'a' + 10)
              : c >= 'A' && c <= 'F' ? int(c - 'A' + 10)
                                     : -1;
      if (d < 0 || eof())
        return false;
      *v = *v * 16 + uint32_t(d);
      ++i_;
    }
    return true;
  }

  // At '\\'. Class escapes (\d ...) fill several code points; `inClass` makes \b a backspace.
  // *single is set when the escape is one code point (a range endpoint).
  bool escape(bool inClass, CpSet *out, bool *single = nullptr) {
    size_t start = i_;
    ++i_;
    if (eof()) {
      error(start, "'\\' at the end of the pattern");
      return false;
    }
    uint32_t c = peek();
    ++i_;
    if (single)
      *single = true;
    auto one = [&](uint32_t cp) {
      *out = CpSet::of(cp);
      return true;
    };
    auto cls = [&](CpSet s) {
      if (single)
        *single = false;
      *out = std::move(s);
      return true;
    };
    switch (c) {
    case 'd':
      return cls(digitSet());
    case 'D':
      return cls(digitSet().complement());
    case 'w':
      return cls(wordSet());
    case 'W':
      return cls(wordSet().complement());
    case 's':
      return cls(spaceSet());
    case 'S':
      return cls(spaceSet().complement());
    case 'b':
      if (inClass)
        return one(8);
      error(start, "word boundary \\b is not supported (an assertion)");
      return false;
    case 'B':
      error(start, "\\B is not supported (an assertion)");
      return false;
    case 't':
      return one('\t');
    case 'n':
      return one('\n');
    case 'v':
      return one('\v');
    case 'f':
      return one('\f');
    case 'r':
      return one('\r');
    case '0':
      if (peek() >= '0' && peek() <= '9') {
        error(start, "octal escapes are not supported");
        return false;
      }
      return one(0);
    case 'c': {
      uint32_t l = peek();
      if ((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z')) {
        ++i_;
        return one(l % 32);
      }
      error(start, "\\c needs a letter");
      return false;
    }
    case 'x': {
      uint32_t v;
      if (!hex(2, &v)) {
        error(start, "\\x needs two hex digits");
        return false;
      }
      return one(v);
    }
    case 'u': {
      uint32_t v;
      if (peek() == '{') {
        ++i_;
        v = 0;
        size_t digits = 0;
        while (!eof() && peek() != '}') {
          uint32_t d;
          if (!hex(1, &d) || ++digits > 6) {
            error(start, "bad \\u{...} escape");
            return false;
          }
          v = v * 16 + d;
        }
        if (eof() || v > kMaxCodePoint) {
          error(start, "bad \\u{...} escape");
          return false;
        }
        ++i_;
        return one(v);
      }
      if (!hex(4, &v)) {
        error(start, "\\u needs four hex digits");
        return false;
      }
      if (v >= 0xD800 && v <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
        size_t save = i_;
        i_ += 2;
        uint32_t lo;
        if (hex(4, &lo) && lo >= 0xDC00 && lo <= 0xDFFF)
          return one(0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00));
        i_ = save;
      }
      if (v >= 0xD800 && v <= 0xDFFF) {
        error(start, "a lone surrogate \\u" + std::to_string(v) + " matches no character");
        return false;
      }
      return one(v);
    }
    case 'k':
      error(start, "named backreference \\k is not supported");
      return false;
    case 'p':
    case 'P':
      error(start, "Unicode property escapes \\p{...} are not supported");
      return false;
    default:
      break;
    }
    if (c >= '1' && c <= '9') {
      error(start, "backreference \\" + std::string(1, char(c)) + " is not supported");
      return false;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      error(start, "unknown escape \\" + std::string(1, char(c)));
      return false;
    }
    return one(c); // identity escape: \. \\ \/ \- ...
  }

  int32_t charClass() {
    size_t start = i_;
    ++i_;
    bool negate = false;
    if (peek() == '^' && !eof()) {
      negate = true;
      ++i_;
    }
    CpSet set;
    while (true) {
      if (eof())
        return error(start, "unterminated character class '['");
      if (peek() == ']') {
        ++i_;
        break;
      }
      CpSet lo;
      bool loSingle = true;
      if (!classAtom(&lo, &loSingle))
        return -1;
      if (peek() == '-' && peek(1) != ']' && i_ + 1 < cps_.size()) {
        size_t dash = i_;
        ++i_;
        CpSet hi;
        bool hiSingle = true;
        if (!classAtom(&hi, &hiSingle))
          return -1;
        if (!loSingle || !hiSingle)
          return error(dash, "a class escape like \\d cannot bound a range");
        uint32_t a = lo.ranges()[0].first, b = hi.ranges()[0].first;
        if (a > b)
          return error(dash, "range out of order in character class");
        set.add(a, b);
      } else {
        set.add(lo);
      }
    }
    return setNode(negate ? set.complement() : set, start);
  }

  bool classAtom(CpSet *out, bool *single) {
    if (peek() == '\\')
      return escape(true, out, single);
    *out = CpSet::of(peek());
    *single = true;
    ++i_;
    return true;
  }

  std::string_view text_;
  std::vector<uint32_t> cps_;
  std::vector<size_t> offs_;
  size_t i_ = 0;
  int depth_ = 0;
  std::string error_;

public:
  size_t byteOffset(size_t i) const { return offs_[std::min(i, cps_.size())]; }
};

struct Frag {
  int32_t start, end;
};

class Builder {
public:
  Builder(const std::vector<Node> &nodes, CharNfa &nfa, size_t maxStates)
      : nodes_(nodes), nfa_(nfa), kMaxStates(maxStates) {}

  Expected<Frag> build(int32_t id) {
    if (nfa_.stateCount() > kMaxStates)
      return Status::error("regex: the pattern expands to more than " +
                           std::to_string(kMaxStates) + " automaton states");
    const Node &n = nodes_[id];
    int32_t s = nfa_.addState(), e;
    switch (n.kind) {
    case Node::Empty:
      return Frag{s, s};
    case Node::Set:
      e = nfa_.addState();
      nfa_.addEdge(s, e, n.set);
      return Frag{s, e};
    case Node::Concat: {
      int32_t cur = s;
      for (int32_t k : n.kids) {
        auto f = build(k);
        if (!f)
          return f.status();
        nfa_.addEps(cur, f->start);
        cur = f->end;
      }
      return Frag{s, cur};
    }
    case Node::Alt: {
      e = nfa_.addState();
      for (int32_t k : n.kids) {
        auto f = build(k);
        if (!f)
          return f.status();
        nfa_.addEps(s, f->start);
        nfa_.addEps(f->end, e);
      }
      return Frag{s, e};
    }
    case Node::Repeat: {
      int32_t cur = s;
      for (int64_t k = 0; k < n.min; ++k) {
        auto f = build(n.kids[0]);
        if (!f)
          return f.status();
        nfa_.addEps(cur, f->start);
        cur = f->end;
      }
      if (n.max < 0) {
        auto f = build(n.kids[0]);
        if (!f)
          return f.status();
        nfa_.addEps(cur, f->start);
        nfa_.addEps(f->end, cur);
        return Frag{s, cur};
      }
      e = nfa_.addState();
      nfa_.addEps(cur, e);
      for (int64_t k = n.min; k < n.max; ++k) {
        auto f = build(n.kids[0]);
        if (!f)
          return f.status();
        nfa_.addEps(cur, f->start);
        nfa_.addEps(f->end, e);
        cur = f->end;
      }
      return Frag{s, e};
    }
    case Node::Start:
    case Node::End:
      break;
    }
    return Status::error("regex: internal error: an anchor reached the automaton builder");
  }

private:
  const std::vector<Node> &nodes_;
  CharNfa &nfa_;
  const size_t kMaxStates;
};

// Finds an anchor anywhere under `id` (an error: only the ends of top-level alternatives may
// hold one).
const Node *findAnchor(const std::vector<Node> &nodes, int32_t id) {
  const Node &n = nodes[id];
  if (n.kind == Node::Start || n.kind == Node::End)
    return &n;
  for (int32_t k : n.kids)
    if (const Node *a = findAnchor(nodes, k))
      return a;
  return nullptr;
}

} // namespace

Expected<CharNfa> compileRegex(std::string_view pattern, RegexMode mode, size_t maxStates) {
  Parser parser(pattern);
  auto root = parser.parse();
  if (!root)
    return root.status();
  std::vector<Node> &nodes = parser.nodes;

  // Top-level alternatives with their anchors peeled off.
  std::vector<int32_t> alts;
  if (nodes[*root].kind == Node::Alt)
    alts = nodes[*root].kids;
  else
    alts = {*root};
  Node any;
    any.kind = Node::Repeat;
  {
    Node all;
    all.kind = Node::Set;
    all.set = CpSet::all();
    nodes.push_back(all);
    any.kids = {int32_t(nodes.size() - 1)};
    any.min = 0;
    any.max = -1;
    nodes.push_back(any);
  }
  int32_t anyStar = int32_t(nodes.size() - 1);
  Node top;
    top.kind = Node::Alt;
  for (int32_t a : alts) {
    std::vector<int32_t> parts;
    if (nodes[a].kind == Node::Concat)
      parts = nodes[a].kids;
    else
      parts = {a};
    bool anchoredStart = false, anchoredEnd = false;
    while (!parts.empty() && nodes[parts.front()].kind == Node::Start) {
      anchoredStart = true;
      parts.erase(parts.begin());
    }
    while (!parts.empty() && nodes[parts.back()].kind == Node::End) {
      anchoredEnd = true;
      parts.pop_back();
    }
    for (int32_t p : parts)
      if (const Node *anchor = findAnchor(nodes, p))
        return Status::error("regex: at offset " + std::to_string(parser.byteOffset(anchor->offset)) +
                             ": " + (anchor->kind == Node::Start ? "^" : "$") +
                             " is supported only at the start/end of the pattern or of a "
                             "top-level alternative");
    if (mode == RegexMode::Search) {
      if (!anchoredStart)
        parts.insert(parts.begin(), anyStar);
      if (!anchoredEnd)
        parts.push_back(anyStar);
    }
    Node seq;
    seq.kind = Node::Concat;
    seq.kids = parts;
    nodes.push_back(seq);
    top.kids.push_back(int32_t(nodes.size() - 1));
  }
  nodes.push_back(top);
  CharNfa nfa;
  Builder builder(nodes, nfa, maxStates);
  auto frag = builder.build(int32_t(nodes.size() - 1));
  if (!frag)
    return frag.status();
  nfa.start = frag->start;
  nfa.accept[frag->end] = 1;
  return determinize(removeEpsilons(nfa), 2000);
}

} // namespace fm::grammar
