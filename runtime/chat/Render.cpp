// The chat template interpreter: Jinja2's runtime semantics for the subset
// of Template.h, Python's semantics for the values.
#include "chat/Render.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace fm::chat {
namespace {

using VK = Value::Kind;

[[noreturn]] void fail(const std::string &what, int line) {
  throw TemplateError(what, line);
}

// ---- UTF-8 code points (Python strings index by code point) -------------

std::vector<size_t> charStarts(const std::string &s) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80)
      starts.push_back(i);
  return starts;
}

uint32_t codePointAt(const std::string &s, size_t i, size_t *n) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  if (i + len > s.size())
    len = 1;
  uint32_t cp = len == 1 ? c : c & (0xFF >> (len + 1));
  for (size_t k = 1; k < len; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  *n = len;
  return cp;
}

bool pySpace(uint32_t c) { // str.isspace()
  return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) ||
         c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// str.strip/lstrip/rstrip(chars): chars empty = whitespace.
std::string pyStrip(const std::string &s, const Value *chars, bool left,
                    bool right) {
  std::vector<uint32_t> set;
  bool useSet = chars && !chars->isUndefined() && chars->kind != VK::None;
  if (useSet) {
    if (!chars->isString())
      throw TemplateError("strip arg must be None or str", 0);
    for (size_t i = 0, n; i < chars->s.size(); i += n)
      set.push_back(codePointAt(chars->s, i, &n));
  }
  auto strip = [&](uint32_t c) {
    return useSet ? std::find(set.begin(), set.end(), c) != set.end() : pySpace(c);
  };
  size_t begin = 0, end = s.size(), n;
  if (left)
    while (begin < end && strip(codePointAt(s, begin, &n)))
      begin += n;
  if (right) {
    while (end > begin) {
      size_t st = end - 1;
      while (st > begin && (static_cast<unsigned char>(s[st]) & 0xC0) == 0x80)
        --st;
      if (!strip(codePointAt(s, st, &n)))
        break;
      end = st;
    }
  }
  return s.substr(begin, end - begin);
}

std::string asciiCase(std::string s, bool upper) {
  for (char &c : s)
    c = upper ? (c >= 'a' && c <= 'z' ? char(c - 32) : c)
              : (c >= 'A' && c <= 'Z' ? char(c + 32) : c);
  return s;
}

// ---- Python slicing ----------------------------------------------------

struct SliceIndices {
  int64_t start, stop, step;
};

SliceIndices sliceIndices(const Value *a, const Value *b, const Value *c,
                          int64_t length, int line) {
  auto get = [&](const Value *v, bool *set) -> int64_t {
    *set = v && v->kind != VK::None && !v->isUndefined();
    if (!*set)
      return 0;
    if (v->kind != VK::Int && v->kind != VK::Bool)
      fail("slice indices must be integers or None", line);
    return v->kind == VK::Bool ? v->b : v->i;
  };
  bool hasStart, hasStop, hasStep;
  int64_t start = get(a, &hasStart), stop = get(b, &hasStop),
          step = get(c, &hasStep);
  if (!hasStep)
    step = 1;
  if (step == 0)
    fail("slice step cannot be zero", line);
  auto adjust = [&](int64_t x, bool has, int64_t dflt) {
    if (!has)
      return dflt;
    if (x < 0) {
      x += length;
      if (x < 0)
        x = step < 0 ? -1 : 0;
    } else if (x >= length) {
      x = step < 0 ? length - 1 : length;
    }
    return x;
  };
  start = adjust(start, hasStart, step < 0 ? length - 1 : 0);
  stop = adjust(stop, hasStop, step < 0 ? -1 : length);
  return {start, stop, step};
}

// ---- the interpreter -----------------------------------------------------

struct Scope {
  std::unordered_map<std::string, Value> vars;
  const Scope *parent = nullptr;
  const Value *lookup(const std::string &n) const {
    for (const Scope *s = this; s; s = s->parent) {
      auto it = s->vars.find(n);
      if (it != s->vars.end())
        return &it->second;
    }
    return nullptr;
  }
};

enum class Flow { Normal, Break, Continue };

struct Renderer {
  const RenderLimits &limits;
  std::time_t now;
  std::string *out;
  uint64_t steps = 0;
  int depth = 0;
  Scope globals;

  Renderer(const RenderLimits &l, std::time_t t) : limits(l), now(t) {}

  void step(int line) {
    if (++steps > limits.maxSteps)
      fail("the template runs too long (over " +
               std::to_string(limits.maxSteps) + " steps)",
           line);
  }
  void write(const std::string &s, int line) {
    if (out->size() + s.size() > limits.maxOutputBytes)
      fail("the template's output exceeds " +
               std::to_string(limits.maxOutputBytes) + " bytes",
           line);
    *out += s;
  }

  // ---- statements ----

  Flow exec(const NodeList &nodes, Scope &scope) {
    for (const auto &n : nodes) {
      Flow f = exec(*n, scope);
      if (f != Flow::Normal)
        return f;
    }
    return Flow::Normal;
  }

  Flow exec(const Node &n, Scope &scope) {
    step(n.line);
    switch (n.kind) {
    case Node::Kind::Text:
      write(n.text, n.line);
      return Flow::Normal;
    case Node::Kind::Output:
      write(eval(*n.expr, scope).str(), n.line);
      return Flow::Normal;
    case Node::Kind::If:
      for (size_t k = 0; k < n.branches.size(); ++k)
        if (!n.conditions[k] || eval(*n.conditions[k], scope).truthy())
          return exec(n.branches[k], scope);
      return Flow::Normal;
    case Node::Kind::For:
      return forLoop(n, scope);
    case Node::Kind::Set: {
      Value v = eval(*n.expr, scope);
      if (n.attributeTarget) {
        const Value *ns = scope.lookup(n.targets[0]);
        if (!ns || ns->kind != VK::Namespace)
          fail("can only set attributes on a namespace ('" + n.targets[0] +
                   "' is not one)",
               n.line);
        ns->dict->set(n.targets[1], v);
      } else if (n.targets.size() == 1) {
        scope.vars[n.targets[0]] = v;
      } else {
        std::vector<Value> items = iterate(v, n.line);
        if (items.size() != n.targets.size())
          fail("cannot unpack " + std::to_string(items.size()) + " values into " +
                   std::to_string(n.targets.size()),
               n.line);
        for (size_t k = 0; k < items.size(); ++k)
          scope.vars[n.targets[k]] = items[k];
      }
      return Flow::Normal;
    }
    case Node::Kind::SetBlock: {
      std::string captured;
      std::string *saved = out;
      out = &captured;
      Scope inner;
      inner.parent = &scope;
      exec(n.body, inner);
      out = saved;
      scope.vars[n.targets[0]] = Value::string(captured);
      return Flow::Normal;
    }
    case Node::Kind::Macro:
      scope.vars[n.name] = macro(n, scope);
      return Flow::Normal;
    case Node::Kind::Break:
      return Flow::Break;
    case Node::Kind::Continue:
      return Flow::Continue;
    case Node::Kind::Scope:
      return exec(n.body, scope);
    }
    return Flow::Normal;
  }

  Flow forLoop(const Node &n, Scope &scope) {
    Value iterable = eval(*n.expr, scope);
    std::vector<Value> items = iterate(iterable, n.line);
    if (n.filter) {
      std::vector<Value> kept;
      for (const Value &item : items) {
        Scope probe;
        probe.parent = &scope;
        bind(n, probe, item);
        if (eval(*n.filter, probe).truthy())
          kept.push_back(item);
      }
      items.swap(kept);
    }
    if (items.empty()) {
      if (!n.elseBody.empty()) {
        Scope inner;
        inner.parent = &scope;
        return exec(n.elseBody, inner) == Flow::Break ? Flow::Normal
                                                      : Flow::Normal;
      }
      return Flow::Normal;
    }
    int64_t length = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < length; ++k) {
      step(n.line);
      Scope inner; // a fresh scope each iteration, as Jinja's
      inner.parent = &scope;
      bind(n, inner, items[k]);
      Value loop = Value::makeDict();
      Dict &d = *loop.dict;
      d.set("index0", Value::integer(k));
      d.set("index", Value::integer(k + 1));
      d.set("revindex0", Value::integer(length - k - 1));
      d.set("revindex", Value::integer(length - k));
      d.set("first", Value::boolean(k == 0));
      d.set("last", Value::boolean(k == length - 1));
      d.set("length", Value::integer(length));
      d.set("depth", Value::integer(1));
      d.set("depth0", Value::integer(0));
      d.set("previtem", k > 0 ? items[k - 1] : Value::undefined("loop.previtem"));
      d.set("nextitem",
            k + 1 < length ? items[k + 1] : Value::undefined("loop.nextitem"));
      auto cyc = std::make_shared<Callable>();
      cyc->name = "loop.cycle";
      cyc->call = [k, line = n.line](const Args &a) {
        if (a.positional.empty())
          fail("no items for cycling given", line);
        return a.positional[static_cast<size_t>(k) % a.positional.size()];
      };
      d.set("cycle", Value::callable(cyc));
      inner.vars["loop"] = loop;
      if (exec(n.body, inner) == Flow::Break)
        break;
    }
    return Flow::Normal;
  }

  void bind(const Node &n, Scope &scope, const Value &item) {
    if (n.targets.size() == 1) {
      scope.vars[n.targets[0]] = item;
      return;
    }
    std::vector<Value> parts = iterate(item, n.line);
    if (parts.size() != n.targets.size())
      fail("cannot unpack " + std::to_string(parts.size()) + " values into " +
               std::to_string(n.targets.size()) + " loop variables",
           n.line);
    for (size_t k = 0; k < parts.size(); ++k)
      scope.vars[n.targets[k]] = parts[k];
  }

  Value macro(const Node &n, const Scope &defining) {
    auto fn = std::make_shared<Callable>();
    fn->name = n.name;
    const Node *node = &n;
    const Scope *where = &defining;
    fn->call = [this, node, where](const Args &a) {
      if (++depth > limits.maxDepth)
        fail("macros nest deeper than " + std::to_string(limits.maxDepth),
             node->line);
      Scope inner;
      inner.parent = where;
      for (size_t k = 0; k < node->params.size(); ++k) {
        const std::string &p = node->params[k];
        if (k < a.positional.size())
          inner.vars[p] = a.positional[k];
        else if (const Value *v = a.kw(p))
          inner.vars[p] = *v;
        else if (node->defaults[k])
          inner.vars[p] = eval(*node->defaults[k], inner);
        else
          inner.vars[p] = Value::undefined(p);
      }
      if (a.positional.size() > node->params.size())
        fail("macro '" + node->name + "' takes not more than " +
                 std::to_string(node->params.size()) + " argument(s)",
             node->line);
      std::string captured;
      std::string *saved = out;
      out = &captured;
      exec(node->body, inner);
      out = saved;
      --depth;
      return Value::string(captured);
    };
    return Value::callable(fn);
  }

  // ---- expressions ----

  std::vector<Value> iterate(const Value &v, int line) {
    switch (v.kind) {
    case VK::List:
      return *v.list;
    case VK::Dict: {
      std::vector<Value> keys;
      for (const auto &kv : v.dict->items)
        keys.push_back(Value::string(kv.first));
      return keys;
    }
    case VK::String: {
      std::vector<Value> chars;
      for (size_t i = 0, n; i < v.s.size(); i += n) {
        codePointAt(v.s, i, &n);
        chars.push_back(Value::string(v.s.substr(i, n)));
      }
      return chars;
    }
    case VK::Undefined:
      return {};
    default:
      fail(std::string("'") + v.typeName() + "' object is not iterable", line);
    }
  }

  Value eval(const Expr &e, Scope &scope) {
    switch (e.kind) {
    case Expr::Kind::Const:
      return e.value;
    case Expr::Kind::Name: {
      if (const Value *v = scope.lookup(e.name))
        return *v;
      return Value::undefined("'" + e.name + "' is undefined");
    }
    case Expr::Kind::Attr:
      return attribute(eval(*e.kids[0], scope), e.name, e.line);
    case Expr::Kind::Item:
      return item(eval(*e.kids[0], scope), eval(*e.kids[1], scope), e.line);
    case Expr::Kind::Slice: {
      Value obj = eval(*e.kids[0], scope);
      Value parts[3];
      for (int k = 0; k < 3; ++k)
        if (e.kids[k + 1])
          parts[k] = eval(*e.kids[k + 1], scope);
      return slice(obj, e.kids[1] ? &parts[0] : nullptr,
                   e.kids[2] ? &parts[1] : nullptr,
                   e.kids[3] ? &parts[2] : nullptr, e.line);
    }
    case Expr::Kind::Call: {
      Value callee = eval(*e.kids[0], scope);
      Args a = arguments(e, scope, 1);
      if (callee.kind != VK::Callable) {
        if (callee.isUndefined())
          fail(callee.s.empty() ? "calling an undefined value" : callee.s, e.line);
        fail(std::string("'") + callee.typeName() + "' object is not callable",
             e.line);
      }
      try {
        return callee.fn->call(a);
      } catch (TemplateError &err) {
        if (!err.line)
          throw TemplateError(err.what(), e.line);
        throw;
      }
    }
    case Expr::Kind::Filter: {
      Value v = eval(*e.kids[0], scope);
      Args a = arguments(e, scope, 1);
      return filter(e.name, v, a, e.line, scope);
    }
    case Expr::Kind::Test: {
      Value v = eval(*e.kids[0], scope);
      Args a = arguments(e, scope, 1);
      bool r = test(e.name, v, a, e.line);
      return Value::boolean(e.negated ? !r : r);
    }
    case Expr::Kind::Unary: {
      Value v = eval(*e.kids[0], scope);
      if (v.kind == VK::Int || v.kind == VK::Bool)
        return Value::integer(e.name == "-" ? -(v.kind == VK::Bool ? v.b : v.i)
                                            : (v.kind == VK::Bool ? v.b : v.i));
      if (v.kind == VK::Float)
        return Value::number(e.name == "-" ? -v.f : v.f);
      fail(std::string("bad operand type for unary ") + e.name + ": '" +
               v.typeName() + "'",
           e.line);
    }
    case Expr::Kind::Binary:
      return binary(e.name, eval(*e.kids[0], scope), eval(*e.kids[1], scope),
                    e.line);
    case Expr::Kind::Compare: {
      Value left = eval(*e.kids[0], scope);
      for (size_t k = 0; k < e.ops.size(); ++k) {
        Value right = eval(*e.kids[k + 1], scope);
        if (!compare(e.ops[k], left, right, e.line))
          return Value::boolean(false);
        left = right;
      }
      return Value::boolean(true);
    }
    case Expr::Kind::And: {
      Value l = eval(*e.kids[0], scope);
      return l.truthy() ? eval(*e.kids[1], scope) : l;
    }
    case Expr::Kind::Or: {
      Value l = eval(*e.kids[0], scope);
      return l.truthy() ? l : eval(*e.kids[1], scope);
    }
    case Expr::Kind::Not:
      return Value::boolean(!eval(*e.kids[0], scope).truthy());
    case Expr::Kind::Cond:
      if (eval(*e.kids[0], scope).truthy())
        return eval(*e.kids[1], scope);
      return e.kids[2] ? eval(*e.kids[2], scope)
                       : Value::undefined("the else branch of an if expression");
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      List items;
      for (const auto &k : e.kids)
        items.push_back(eval(*k, scope));
      return e.kind == Expr::Kind::Tuple ? Value::makeTuple(std::move(items))
                                         : Value::makeList(std::move(items));
    }
    case Expr::Kind::Dict: {
      Value d = Value::makeDict();
      for (size_t k = 0; k + 1 < e.kids.size(); k += 2) {
        Value key = eval(*e.kids[k], scope);
        if (!key.isString())
          fail("dict keys must be strings in fmc's chat templates", e.line);
        d.dict->set(key.s, eval(*e.kids[k + 1], scope));
      }
      return d;
    }
    }
    fail("unknown expression", e.line);
  }

  Args arguments(const Expr &e, Scope &scope, size_t from) {
    Args a;
    for (size_t k = from; k < e.kids.size(); ++k)
      a.positional.push_back(eval(*e.kids[k], scope));
    for (const auto &kv : e.kwargs)
      a.keyword.emplace_back(kv.first, eval(*kv.second, scope));
    return a;
  }

  static int64_t asInt(const Value &v, int line, const char *what) {
    if (v.kind == VK::Int)
      return v.i;
    if (v.kind == VK::Bool)
      return v.b;
    fail(std::string(what) + " must be an integer, not '" + v.typeName() + "'",
         line);
  }
  static double asFloat(const Value &v) {
    return v.kind == VK::Float ? v.f : v.kind == VK::Bool ? v.b : double(v.i);
  }

  Value binary(const std::string &op, const Value &a, const Value &b, int line) {
    if (op == "~")
      return Value::string(a.str() + b.str());
    auto type = [&] {
      fail("unsupported operand type(s) for " + op + ": '" + a.typeName() +
               "' and '" + b.typeName() + "'",
           line);
    };
    if (a.isUndefined() || b.isUndefined())
      fail((a.isUndefined() ? a.s : b.s).empty() ? "an undefined value in '" + op + "'"
                                               : (a.isUndefined() ? a.s : b.s),
           line);
    bool ints = (a.kind == VK::Int || a.kind == VK::Bool) &&
                (b.kind == VK::Int || b.kind == VK::Bool);
    bool nums = a.isNumber() && b.isNumber();
    if (op == "+") {
      if (a.isString() && b.isString())
        return Value::string(a.s + b.s);
      if (a.kind == VK::List && b.kind == VK::List) {
        List l = *a.list;
        l.insert(l.end(), b.list->begin(), b.list->end());
        return Value::makeList(std::move(l));
      }
      if (ints) {
        int64_t r;
        if (__builtin_add_overflow(asInt(a, line, ""), asInt(b, line, ""), &r))
          fail("integer overflow", line);
        return Value::integer(r);
      }
      if (nums)
        return Value::number(asFloat(a) + asFloat(b));
      type();
    }
    if (op == "-") {
      if (ints) {
        int64_t r;
        if (__builtin_sub_overflow(asInt(a, line, ""), asInt(b, line, ""), &r))
          fail("integer overflow", line);
        return Value::integer(r);
      }
      if (nums)
        return Value::number(asFloat(a) - asFloat(b));
      type();
    }
    if (op == "*") {
      if (ints) {
        int64_t r;
        if (__builtin_mul_overflow(asInt(a, line, ""), asInt(b, line, ""), &r))
          fail("integer overflow", line);
        return Value::integer(r);
      }
      if (nums)
        return Value::number(asFloat(a) * asFloat(b));
      const Value *seq = a.isString() || a.kind == VK::List ? &a : &b;
      const Value *count = seq == &a ? &b : &a;
      if ((seq->isString() || seq->kind == VK::List) &&
          (count->kind == VK::Int || count->kind == VK::Bool)) {
        int64_t n = std::max<int64_t>(0, asInt(*count, line, ""));
        size_t unit = seq->isString() ? seq->s.size() : seq->list->size();
        if (unit && static_cast<uint64_t>(n) * unit > limits.maxOutputBytes)
          fail("a repetition larger than the output limit", line);
        if (seq->isString()) {
          std::string r;
          for (int64_t k = 0; k < n; ++k)
            r += seq->s;
          return Value::string(r);
        }
        List l;
        for (int64_t k = 0; k < n; ++k)
          l.insert(l.end(), seq->list->begin(), seq->list->end());
        return Value::makeList(std::move(l));
      }
      type();
    }
    if (op == "/") {
      if (!nums)
        type();
      if (asFloat(b) == 0)
        fail("division by zero", line);
      return Value::number(asFloat(a) / asFloat(b));
    }
    if (op == "//" || op == "%") {
      if (!nums)
        type();
      if (asFloat(b) == 0)
        fail(op == "//" ? "integer division or modulo by zero" : "modulo by zero",
             line);
      if (ints) {
        int64_t x = asInt(a, line, ""), y = asInt(b, line, "");
        if (x == INT64_MIN && y == -1)
          fail("integer overflow", line);
        int64_t q = x / y, r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) {
          --q;
          r += y;
        }
        return Value::integer(op == "//" ? q : r);
      }
      double x = asFloat(a), y = asFloat(b);
      double q = std::floor(x / y);
      return Value::number(op == "//" ? q : x - q * y);
    }
    if (op == "**") {
      if (ints && asInt(b, line, "") >= 0) {
        int64_t base = asInt(a, line, ""), e = asInt(b, line, ""), r = 1;
        for (int64_t k = 0; k < e; ++k)
          if (__builtin_mul_overflow(r, base, &r))
            fail("integer overflow", line);
        return Value::integer(r);
      }
      if (nums)
        return Value::number(std::pow(asFloat(a), asFloat(b)));
      type();
    }
    fail("unknown operator " + op, line);
  }

  bool contains(const Value &container, const Value &x, int line) {
    switch (container.kind) {
    case VK::String:
      if (!x.isString())
        fail("'in <string>' requires string as left operand, not " +
                 std::string(x.typeName()),
             line);
      return container.s.find(x.s) != std::string::npos;
    case VK::List:
      for (const Value &v : *container.list)
        if (equal(v, x))
          return true;
      return false;
    case VK::Dict:
      return x.isString() && container.dict->find(x.s) != nullptr;
    case VK::Undefined:
      return false;
    default:
      fail(std::string("argument of type '") + container.typeName() +
               "' is not iterable",
           line);
    }
  }

  bool compare(const std::string &op, const Value &a, const Value &b, int line) {
    if (op == "==")
      return equal(a, b);
    if (op == "!=")
      return !equal(a, b);
    if (op == "in")
      return contains(b, a, line);
    if (op == "not in")
      return !contains(b, a, line);
    bool ok;
    bool lt = less(a, b, &ok), gt = ok ? less(b, a, &ok) : false;
    if (!ok)
      fail("'" + op + "' not supported between instances of '" +
               a.typeName() + "' and '" + b.typeName() + "'",
           line);
    if (op == "<")
      return lt;
    if (op == ">")
      return gt;
    if (op == "<=")
      return !gt;
    return !lt; // >=
  }

  // Jinja's getattr: an attribute (a method) first, then the item.
  Value attribute(const Value &obj, const std::string &name, int line) {
    if (obj.isUndefined())
      fail(obj.s.empty() ? "'" + name + "' of an undefined value" : obj.s, line);
    if (obj.kind == VK::Namespace) {
      if (const Value *v = obj.dict->find(name))
        return *v;
      return Value::undefined("'Namespace' object has no attribute '" + name + "'");
    }
    if (Value m = method(obj, name, line); !m.isUndefined())
      return m;
    if (obj.kind == VK::Dict) {
      if (const Value *v = obj.dict->find(name))
        return *v;
      return Value::undefined("'dict object' has no attribute '" + name + "'");
    }
    return Value::undefined(std::string("'") + obj.typeName() +
                            " object' has no attribute '" + name + "'");
  }

  // Jinja's getitem: the item first, then an attribute.
  Value item(const Value &obj, const Value &key, int line) {
    if (obj.isUndefined())
      fail(obj.s.empty() ? "subscript of an undefined value" : obj.s, line);
    if (obj.kind == VK::Dict) {
      if (key.isString()) {
        if (const Value *v = obj.dict->find(key.s))
          return *v;
        if (Value m = method(obj, key.s, line); !m.isUndefined())
          return m;
      }
      return Value::undefined("'dict object' has no attribute '" + key.str() + "'");
    }
    if ((obj.kind == VK::List || obj.isString()) &&
        (key.kind == VK::Int || key.kind == VK::Bool)) {
      int64_t i = key.kind == VK::Bool ? key.b : key.i;
      if (obj.kind == VK::List) {
        int64_t n = static_cast<int64_t>(obj.list->size());
        if (i < 0)
          i += n;
        if (i < 0 || i >= n)
          return Value::undefined("list index out of range");
        return (*obj.list)[static_cast<size_t>(i)];
      }
      std::vector<size_t> starts = charStarts(obj.s);
      int64_t n = static_cast<int64_t>(starts.size());
      if (i < 0)
        i += n;
      if (i < 0 || i >= n)
        return Value::undefined("string index out of range");
      size_t b = starts[i], e = i + 1 < n ? starts[i + 1] : obj.s.size();
      return Value::string(obj.s.substr(b, e - b));
    }
    if (key.isString())
      return attribute(obj, key.s, line);
    return Value::undefined(std::string("'") + obj.typeName() +
                            " object' has no item " + key.repr());
  }

  Value slice(const Value &obj, const Value *a, const Value *b, const Value *c,
              int line) {
    if (obj.kind == VK::List) {
      SliceIndices s = sliceIndices(a, b, c, int64_t(obj.list->size()), line);
      List out;
      for (int64_t i = s.start; s.step > 0 ? i < s.stop : i > s.stop; i += s.step)
        out.push_back((*obj.list)[static_cast<size_t>(i)]);
      return Value::makeList(std::move(out));
    }
    if (obj.isString()) {
      std::vector<size_t> starts = charStarts(obj.s);
      int64_t n = static_cast<int64_t>(starts.size());
      SliceIndices s = sliceIndices(a, b, c, n, line);
      std::string out;
      for (int64_t i = s.start; s.step > 0 ? i < s.stop : i > s.stop; i += s.step) {
        size_t st = starts[i], e = i + 1 < n ? starts[i + 1] : obj.s.size();
        out.append(obj.s, st, e - st);
      }
      return Value::string(out);
    }
    if (obj.isUndefined())
      fail(obj.s.empty() ? "slice of an undefined value" : obj.s, line);
    fail(std::string("'") + obj.typeName() + "' object is not subscriptable",
         line);
  }

  Value bound(const std::string &name,
              std::function<Value(const Args &)> f) {
    auto fn = std::make_shared<Callable>();
    fn->name = name;
    fn->call = std::move(f);
    return Value::callable(fn);
  }

  static const Value *arg(const Args &a, size_t i, const char *name) {
    if (i < a.positional.size())
      return &a.positional[i];
    return a.kw(name);
  }

  // The methods of str and dict that chat templates call.
  Value method(const Value &obj, const std::string &name, int line) {
    if (obj.isString()) {
      const std::string s = obj.s;
      if (name == "startswith" || name == "endswith") {
        bool starts = name == "startswith";
        return bound(name, [s, starts, line](const Args &a) {
          const Value *p = arg(a, 0, "prefix");
          if (!p)
            fail("startswith/endswith takes a prefix", line);
          std::vector<std::string> options;
          if (p->isString())
            options.push_back(p->s);
          else if (p->kind == VK::List)
            for (const Value &v : *p->list) {
              if (!v.isString())
                fail("a tuple of strings is required", line);
              options.push_back(v.s);
            }
          else
            fail("startswith/endswith first arg must be str or a tuple of str",
                 line);
          for (const std::string &o : options) {
            if (starts && s.compare(0, o.size(), o) == 0)
              return Value::boolean(true);
            if (!starts && s.size() >= o.size() &&
                s.compare(s.size() - o.size(), o.size(), o) == 0)
              return Value::boolean(true);
          }
          return Value::boolean(false);
        });
      }
      if (name == "strip" || name == "lstrip" || name == "rstrip") {
        bool l = name != "rstrip", r = name != "lstrip";
        return bound(name, [s, l, r](const Args &a) {
          return Value::string(pyStrip(s, arg(a, 0, "chars"), l, r));
        });
      }
      if (name == "split" || name == "rsplit") {
        bool right = name == "rsplit";
        return bound(name, [s, right, line](const Args &a) {
          const Value *sep = arg(a, 0, "sep");
          const Value *maxv = arg(a, 1, "maxsplit");
          int64_t maxsplit = maxv ? asInt(*maxv, line, "maxsplit") : -1;
          List parts;
          if (!sep || sep->kind == VK::None) {
            // Runs of whitespace, no empty parts.
            std::vector<std::pair<size_t, size_t>> words;
            size_t i = 0, n;
            while (i < s.size()) {
              while (i < s.size() && pySpace(codePointAt(s, i, &n)))
                i += n;
              if (i >= s.size())
                break;
              size_t b = i;
              while (i < s.size() && !pySpace(codePointAt(s, i, &n)))
                i += n;
              words.emplace_back(b, i);
            }
            if (maxsplit >= 0 && int64_t(words.size()) > maxsplit + 1) {
              if (!right) {
                size_t b = words[maxsplit].first;
                words.resize(maxsplit);
                for (auto &w : words)
                  parts.push_back(Value::string(s.substr(w.first, w.second - w.first)));
                parts.push_back(Value::string(pyStrip(s.substr(b), nullptr, false, true)));
                return Value::makeList(parts);
              }
              size_t keep = words.size() - maxsplit;
              std::string head = pyStrip(s.substr(0, words[keep - 1].second), nullptr, true, false);
              parts.push_back(Value::string(head));
              for (size_t k = keep; k < words.size(); ++k)
                parts.push_back(Value::string(s.substr(words[k].first, words[k].second - words[k].first)));
              return Value::makeList(parts);
            }
            for (auto &w : words)
              parts.push_back(Value::string(s.substr(w.first, w.second - w.first)));
            return Value::makeList(parts);
          }
          if (!sep->isString())
            fail("must be str or None, not " + std::string(sep->typeName()), line);
          if (sep->s.empty())
            fail("empty separator", line);
          std::vector<std::string> all;
          size_t from = 0, at;
          while ((at = s.find(sep->s, from)) != std::string::npos) {
            all.push_back(s.substr(from, at - from));
            from = at + sep->s.size();
          }
          all.push_back(s.substr(from));
          if (maxsplit >= 0 && int64_t(all.size()) > maxsplit + 1) {
            std::vector<std::string> joined;
            if (!right) {
              joined.assign(all.begin(), all.begin() + maxsplit);
              std::string rest;
              for (size_t k = maxsplit; k < all.size(); ++k)
                rest += (k > size_t(maxsplit) ? sep->s : "") + all[k];
              joined.push_back(rest);
            } else {
              size_t keep = all.size() - maxsplit;
              std::string rest;
              for (size_t k = 0; k < keep; ++k)
                rest += (k ? sep->s : "") + all[k];
              joined.push_back(rest);
              joined.insert(joined.end(), all.begin() + keep, all.end());
            }
            all.swap(joined);
          }
          for (auto &p : all)
            parts.push_back(Value::string(p));
          return Value::makeList(parts);
        });
      }
      if (name == "upper" || name == "lower")
        return bound(name, [s, up = name == "upper"](const Args &) {
          return Value::string(asciiCase(s, up));
        });
      if (name == "title" || name == "capitalize") {
        bool title = name == "title";
        return bound(name, [s, title](const Args &) {
          std::string r = asciiCase(s, false);
          bool start = true;
          for (char &c : r) {
            bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
            if (start && c >= 'a' && c <= 'z')
              c = char(c - 32);
            start = title ? !alpha : false;
          }
          return Value::string(r);
        });
      }
      if (name == "replace")
        return bound(name, [s, line](const Args &a) {
          const Value *o = arg(a, 0, "old"), *n = arg(a, 1, "new");
          const Value *c = arg(a, 2, "count");
          if (!o || !n || !o->isString() || !n->isString())
            fail("replace takes two strings", line);
          int64_t count = c ? asInt(*c, line, "count") : -1;
          return Value::string(replaceAll(s, o->s, n->s, count));
        });
      if (name == "find" || name == "count")
        return bound(name, [s, name, line](const Args &a) {
          const Value *x = arg(a, 0, "sub");
          if (!x || !x->isString())
            fail(name + " takes a string", line);
          if (name == "find") {
            size_t at = s.find(x->s);
            if (at == std::string::npos)
              return Value::integer(-1);
            return Value::integer(int64_t(charStarts(s.substr(0, at)).size()));
          }
          if (x->s.empty())
            return Value::integer(int64_t(charStarts(s).size()) + 1);
          int64_t n = 0;
          for (size_t at = s.find(x->s); at != std::string::npos;
               at = s.find(x->s, at + x->s.size()))
            ++n;
          return Value::integer(n);
        });
      if (name == "join")
        return bound(name, [this, s, line](const Args &a) {
          const Value *it = arg(a, 0, "iterable");
          if (!it)
            fail("join takes an iterable", line);
          std::string r;
          bool first = true;
          for (const Value &v : iterate(*it, line)) {
            if (!v.isString())
              fail("sequence item: expected str instance, " +
                       std::string(v.typeName()) + " found",
                   line);
            r += (first ? "" : s) + v.s;
            first = false;
          }
          return Value::string(r);
        });
      if (name == "isdigit" || name == "isspace" || name == "isalpha" ||
          name == "isupper" || name == "islower")
        return bound(name, [s, name](const Args &) {
          if (s.empty())
            return Value::boolean(false);
          bool all = true, cased = false;
          for (unsigned char c : s) {
            bool ok = name == "isdigit"   ? (c >= '0' && c <= '9')
                      : name == "isspace" ? pySpace(c)
                      : name == "isalpha" ? ((c | 32) >= 'a' && (c | 32) <= 'z')
                      : name == "isupper" ? !(c >= 'a' && c <= 'z')
                                          : !(c >= 'A' && c <= 'Z');
            cased |= (c | 32) >= 'a' && (c | 32) <= 'z';
            all &= ok;
          }
          if (name == "isupper" || name == "islower")
            return Value::boolean(all && cased);
          return Value::boolean(all);
        });
    }
    if (obj.kind == VK::Dict) {
      auto d = obj.dict;
      if (name == "items")
        return bound(name, [d](const Args &) {
          List l;
          for (const auto &kv : d->items)
            l.push_back(Value::makeTuple({Value::string(kv.first), kv.second}));
          return Value::makeList(l);
        });
      if (name == "keys")
        return bound(name, [d](const Args &) {
          List l;
          for (const auto &kv : d->items)
            l.push_back(Value::string(kv.first));
          return Value::makeList(l);
        });
      if (name == "values")
        return bound(name, [d](const Args &) {
          List l;
          for (const auto &kv : d->items)
            l.push_back(kv.second);
          return Value::makeList(l);
        });
      if (name == "get")
        return bound(name, [d](const Args &a) {
          const Value *k = arg(a, 0, "key"), *dflt = arg(a, 1, "default");
          if (k && k->isString())
            if (const Value *v = d->find(k->s))
              return *v;
          return dflt ? *dflt : Value::none();
        });
    }
    return Value::undefined();
  }

  static std::string replaceAll(const std::string &s, const std::string &o,
                                const std::string &n, int64_t count) {
    std::string r;
    if (o.empty()) { // Python inserts `n` around every character
      std::vector<size_t> starts = charStarts(s);
      int64_t done = 0;
      for (size_t k = 0; k <= starts.size(); ++k) {
        if (count < 0 || done < count) {
          r += n;
          ++done;
        }
        if (k < starts.size()) {
          size_t e = k + 1 < starts.size() ? starts[k + 1] : s.size();
          r.append(s, starts[k], e - starts[k]);
        }
      }
      return r;
    }
    size_t from = 0, at;
    int64_t done = 0;
    while ((count < 0 || done < count) &&
           (at = s.find(o, from)) != std::string::npos) {
      r.append(s, from, at - from);
      r += n;
      from = at + o.size();
      ++done;
    }
    r.append(s, from, std::string::npos);
    return r;
  }

  // ---- filters and tests ----

  Value filter(const std::string &name, const Value &v, const Args &a, int line,
               Scope &scope);
  bool test(const std::string &name, const Value &v, const Args &a, int line);
};

Value Renderer::filter(const std::string &name, const Value &v, const Args &a,
                       int line, Scope &scope) {
  (void)scope;
  if (name == "trim")
    return Value::string(pyStrip(v.str(), arg(a, 0, "chars"), true, true));
  if (name == "length" || name == "count") {
    if (v.isString())
      return Value::integer(int64_t(charStarts(v.s).size()));
    if (v.kind == VK::List)
      return Value::integer(int64_t(v.list->size()));
    if (v.kind == VK::Dict)
      return Value::integer(int64_t(v.dict->items.size()));
    if (v.isUndefined())
      return Value::integer(0);
    fail(std::string("object of type '") + v.typeName() + "' has no len()", line);
  }
  if (name == "tojson") {
    const Value *ind = arg(a, 0, "indent");
    const Value *sep = a.kw("separators");
    const Value *sk = a.kw("sort_keys");
    int indent = ind && ind->kind != VK::None ? int(asInt(*ind, line, "indent")) : -1;
    std::string itemSep = indent >= 0 ? "," : ", ", keySep = ": ";
    if (sep && sep->kind == VK::List && sep->list->size() == 2) {
      itemSep = (*sep->list)[0].str();
      keySep = (*sep->list)[1].str();
    }
    try {
      return Value::string(toJson(v, indent, sk && sk->truthy(), itemSep, keySep));
    } catch (std::runtime_error &e) {
      fail(e.what(), line);
    }
  }
  if (name == "upper" || name == "lower")
    return Value::string(asciiCase(v.str(), name == "upper"));
  if (name == "capitalize" || name == "title")
    return method(Value::string(v.str()), name, line).fn->call(Args{});
  if (name == "default" || name == "d") {
    const Value *dflt = arg(a, 0, "default_value");
    const Value *boolean = arg(a, 1, "boolean");
    bool useDefault = v.isUndefined() || (boolean && boolean->truthy() && !v.truthy());
    if (useDefault)
      return dflt ? *dflt : Value::string("");
    return v;
  }
  if (name == "join") {
    const Value *sep = arg(a, 0, "d");
    const Value *attr = arg(a, 1, "attribute");
    std::string r;
    bool first = true;
    for (const Value &x : iterate(v, line)) {
      Value item = attr ? attribute(x, attr->str(), line) : x;
      r += (first ? "" : sep ? sep->str() : "") + item.str();
      first = false;
    }
    return Value::string(r);
  }
  if (name == "first" || name == "last") {
    std::vector<Value> items = iterate(v, line);
    if (items.empty())
      return Value::undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list")
    return Value::makeList(iterate(v, line));
  if (name == "string")
    return Value::string(v.str());
  if (name == "safe")
    return v;
  if (name == "e" || name == "escape") {
    std::string r;
    for (char c : v.str()) {
      switch (c) {
      case '&':
        r += "&amp;";
        break;
      case '<':
        r += "&lt;";
        break;
      case '>':
        r += "&gt;";
        break;
      case '"':
        r += "&#34;";
        break;
      case '\'':
        r += "&#39;";
        break;
      default:
        r.push_back(c);
      }
    }
    return Value::string(r);
  }
  if (name == "int") {
    if (v.kind == VK::Int)
      return v;
    if (v.kind == VK::Bool)
      return Value::integer(v.b);
    if (v.kind == VK::Float)
      return Value::integer(int64_t(v.f));
    if (v.isString()) {
      char *end = nullptr;
      std::string t = pyStrip(v.s, nullptr, true, true);
      long long x = std::strtoll(t.c_str(), &end, 10);
      if (!t.empty() && end && *end == '\0')
        return Value::integer(x);
    }
    const Value *dflt = arg(a, 0, "default");
    return dflt ? *dflt : Value::integer(0);
  }
  if (name == "float") {
    if (v.isNumber())
      return Value::number(asFloat(v));
    if (v.isString()) {
      char *end = nullptr;
      std::string t = pyStrip(v.s, nullptr, true, true);
      double x = std::strtod(t.c_str(), &end);
      if (!t.empty() && end && *end == '\0')
        return Value::number(x);
    }
    const Value *dflt = arg(a, 0, "default");
    return dflt ? *dflt : Value::number(0.0);
  }
  if (name == "abs") {
    if (v.kind == VK::Int || v.kind == VK::Bool)
      return Value::integer(std::llabs(asInt(v, line, "value")));
    if (v.kind == VK::Float)
      return Value::number(std::fabs(v.f));
    fail(std::string("bad operand type for abs(): '") + v.typeName() + "'", line);
  }
  if (name == "replace") {
    const Value *o = arg(a, 0, "old"), *n = arg(a, 1, "new"),
                *c = arg(a, 2, "count");
    if (!o || !n)
      fail("replace takes old and new", line);
    return Value::string(replaceAll(v.str(), o->str(), n->str(),
                                    c && c->kind != VK::None ? asInt(*c, line, "count") : -1));
  }
  if (name == "reverse") {
    if (v.isString()) {
      std::vector<size_t> starts = charStarts(v.s);
      std::string r;
      for (size_t k = starts.size(); k-- > 0;) {
        size_t e = k + 1 < starts.size() ? starts[k + 1] : v.s.size();
        r.append(v.s, starts[k], e - starts[k]);
      }
      return Value::string(r);
    }
    std::vector<Value> items = iterate(v, line);
    std::reverse(items.begin(), items.end());
    return Value::makeList(items);
  }
  if (name == "items") {
    if (v.isUndefined())
      return Value::makeList();
    if (v.kind != VK::Dict)
      fail("items filter needs a mapping", line);
    return method(v, "items", line).fn->call(Args{});
  }
  if (name == "selectattr" || name == "rejectattr" || name == "select" ||
      name == "reject") {
    bool byAttr = name == "selectattr" || name == "rejectattr";
    bool keep = name == "selectattr" || name == "select";
    size_t at = 0;
    std::string attr;
    if (byAttr) {
      if (a.positional.empty())
        fail(name + " needs an attribute name", line);
      attr = a.positional[0].str();
      at = 1;
    }
    std::string testName = at < a.positional.size() ? a.positional[at].str() : "";
    Args testArgs;
    for (size_t k = at + 1; k < a.positional.size(); ++k)
      testArgs.positional.push_back(a.positional[k]);
    List out;
    for (const Value &x : iterate(v, line)) {
      Value probe = byAttr ? attribute(x, attr, line) : x;
      bool r = testName.empty() ? probe.truthy() : test(testName, probe, testArgs, line);
      if (r == keep)
        out.push_back(x);
    }
    return Value::makeList(out);
  }
  if (name == "map") {
    List out;
    const Value *attr = a.kw("attribute");
    const Value *dflt = a.kw("default");
    for (const Value &x : iterate(v, line)) {
      if (attr) {
        Value r = attribute(x, attr->str(), line);
        out.push_back(r.isUndefined() && dflt ? *dflt : r);
      } else {
        if (a.positional.empty())
          fail("map needs a filter name or attribute=", line);
        Args rest;
        rest.positional.assign(a.positional.begin() + 1, a.positional.end());
        rest.keyword = a.keyword;
        out.push_back(filter(a.positional[0].str(), x, rest, line, scope));
      }
    }
    return Value::makeList(out);
  }
  if (name == "unique") {
    List out;
    for (const Value &x : iterate(v, line)) {
      bool seen = false;
      for (const Value &y : out)
        seen |= equal(x, y);
      if (!seen)
        out.push_back(x);
    }
    return Value::makeList(out);
  }
  if (name == "sort") {
    std::vector<Value> items = iterate(v, line);
    const Value *rev = arg(a, 0, "reverse");
    const Value *attr = a.kw("attribute");
    bool failed = false;
    // Python's sort is stable: ties keep their order (the index breaks them).
    std::vector<size_t> order(items.size());
    for (size_t k = 0; k < order.size(); ++k)
      order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t i, size_t j) {
      Value kx = attr ? attribute(items[i], attr->str(), line) : items[i];
      Value ky = attr ? attribute(items[j], attr->str(), line) : items[j];
      bool ok1, ok2;
      bool lt = less(kx, ky, &ok1), gt = less(ky, kx, &ok2);
      failed |= !ok1 || !ok2;
      return lt || (!gt && i < j);
    });
    if (failed)
      fail("sort: the items do not compare", line);
    std::vector<Value> sorted;
    for (size_t k : order)
      sorted.push_back(items[k]);
    items.swap(sorted);
    if (rev && rev->truthy())
      std::reverse(items.begin(), items.end());
    return Value::makeList(items);
  }
  if (name == "sum") {
    const Value *attr = a.kw("attribute");
    Value total = a.kw("start") ? *a.kw("start") : Value::integer(0);
    for (const Value &x : iterate(v, line))
      total = binary("+", total, attr ? attribute(x, attr->str(), line) : x, line);
    return total;
  }
  if (name == "min" || name == "max") {
    std::vector<Value> items = iterate(v, line);
    if (items.empty())
      return Value::undefined("No aggregated item, sequence was empty.");
    Value best = items[0];
    for (const Value &x : items) {
      bool ok;
      bool better = name == "min" ? less(x, best, &ok) : less(best, x, &ok);
      if (!ok)
        fail(name + ": the items do not compare", line);
      if (better)
        best = x;
    }
    return best;
  }
  if (name == "indent") {
    const Value *w = arg(a, 0, "width");
    const Value *first = arg(a, 1, "first");
    const Value *blank = arg(a, 2, "blank");
    std::string pad = w && w->isString() ? w->s
                                         : std::string(size_t(w ? asInt(*w, line, "width") : 4), ' ');
    std::string s = v.str(), r;
    size_t start = 0;
    bool firstLine = true;
    while (true) {
      size_t nl = s.find('\n', start);
      std::string ln = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      bool indentIt = firstLine ? (first && first->truthy()) : (!ln.empty() || (blank && blank->truthy()));
      r += (indentIt ? pad : "") + ln;
      if (nl == std::string::npos)
        break;
      r += "\n";
      start = nl + 1;
      firstLine = false;
    }
    return Value::string(r);
  }
  if (name == "wordcount") {
    int64_t n = 0;
    bool in = false;
    for (unsigned char c : v.str()) {
      bool word = (c | 32) >= 'a' && (c | 32) <= 'z';
      word |= (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
      if (word && !in)
        ++n;
      in = word;
    }
    return Value::integer(n);
  }
  if (name == "round") {
    const Value *prec = arg(a, 0, "precision");
    const Value *meth = arg(a, 1, "method");
    double x = asFloat(v);
    double m = std::pow(10.0, prec ? double(asInt(*prec, line, "precision")) : 0.0);
    std::string how = meth ? meth->str() : "common";
    double r = how == "ceil" ? std::ceil(x * m) / m
               : how == "floor" ? std::floor(x * m) / m
                                : std::round(x * m) / m;
    return Value::number(r);
  }
  fail("no filter named '" + name + "'", line);
}

bool Renderer::test(const std::string &name, const Value &v, const Args &a,
                    int line) {
  const Value *x = a.positional.empty() ? nullptr : &a.positional[0];
  auto need = [&] {
    if (!x)
      fail("the test '" + name + "' needs an argument", line);
  };
  if (name == "defined")
    return !v.isUndefined();
  if (name == "undefined")
    return v.isUndefined();
  if (name == "none")
    return v.kind == VK::None;
  if (name == "string")
    return v.isString();
  if (name == "number")
    return v.isNumber();
  if (name == "integer")
    return v.kind == VK::Int;
  if (name == "float")
    return v.kind == VK::Float;
  if (name == "boolean")
    return v.kind == VK::Bool;
  if (name == "true")
    return v.kind == VK::Bool && v.b;
  if (name == "false")
    return v.kind == VK::Bool && !v.b;
  if (name == "mapping")
    return v.kind == VK::Dict;
  if (name == "iterable")
    return v.isString() || v.kind == VK::List || v.kind == VK::Dict ||
           v.isUndefined();
  if (name == "sequence")
    return v.isString() || v.kind == VK::List || v.kind == VK::Dict;
  if (name == "callable")
    return v.kind == VK::Callable;
  if (name == "even" || name == "odd") {
    int64_t i = asInt(v, line, "the value");
    return (i % 2 == 0) == (name == "even");
  }
  if (name == "divisibleby") {
    need();
    int64_t d = asInt(*x, line, "the divisor");
    if (!d)
      fail("integer division or modulo by zero", line);
    return asInt(v, line, "the value") % d == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==" || name == "sameas") {
    need();
    return equal(v, *x);
  }
  if (name == "ne" || name == "!=") {
    need();
    return !equal(v, *x);
  }
  static const std::map<std::string, std::string> ops = {
      {"lt", "<"}, {"lessthan", "<"}, {"le", "<="}, {"gt", ">"},
      {"greaterthan", ">"}, {"ge", ">="}, {"<", "<"}, {"<=", "<="},
      {">", ">"}, {">=", ">="}};
  if (auto it = ops.find(name); it != ops.end()) {
    need();
    return compare(it->second, v, *x, line);
  }
  if (name == "in") {
    need();
    return contains(*x, v, line);
  }
  if (name == "lower" || name == "upper") {
    std::string s = v.str();
    return asciiCase(s, name == "upper") == s;
  }
  fail("no test named '" + name + "'", line);
}

} // namespace

std::string render(const NodeList &nodes, const Value &globals, std::time_t now,
                   const RenderLimits &limits) {
  Renderer r(limits, now);
  std::string out;
  r.out = &out;
  for (const auto &kv : globals.dict->items)
    r.globals.vars[kv.first] = kv.second;

  auto def = [&](const std::string &name, std::function<Value(const Args &)> f) {
    if (r.globals.vars.count(name))
      return;
    r.globals.vars[name] = r.bound(name, std::move(f));
  };
  def("raise_exception", [](const Args &a) -> Value {
    throw TemplateError(a.positional.empty() ? "raise_exception()"
                                             : a.positional[0].str(),
                        0);
  });
  def("strftime_now", [now](const Args &a) {
    std::string fmt = a.positional.empty() ? "" : a.positional[0].str();
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[512];
    size_t n = fmt.empty() ? 0 : std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
    return Value::string(std::string(buf, n));
  });
  def("namespace", [](const Args &a) {
    Value ns = Value::makeNamespace();
    for (const Value &p : a.positional)
      if (p.kind == VK::Dict)
        for (const auto &kv : p.dict->items)
          ns.dict->set(kv.first, kv.second);
    for (const auto &kv : a.keyword)
      ns.dict->set(kv.first, kv.second);
    return ns;
  });
  def("dict", [](const Args &a) {
    Value d = Value::makeDict();
    for (const auto &kv : a.keyword)
      d.dict->set(kv.first, kv.second);
    return d;
  });
  def("range", [&limits](const Args &a) {
    int64_t start = 0, stop = 0, step = 1;
    auto num = [](const Value &v) {
      if (v.kind != VK::Int && v.kind != VK::Bool)
        throw TemplateError("range() arguments must be integers", 0);
      return v.kind == VK::Bool ? int64_t(v.b) : v.i;
    };
    if (a.positional.size() == 1) {
      stop = num(a.positional[0]);
    } else if (a.positional.size() >= 2) {
      start = num(a.positional[0]);
      stop = num(a.positional[1]);
      if (a.positional.size() > 2)
        step = num(a.positional[2]);
    }
    if (step == 0)
      throw TemplateError("range() arg 3 must not be zero", 0);
    List l;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (l.size() >= limits.maxSteps / 16)
        throw TemplateError("range() is too long", 0);
      l.push_back(Value::integer(i));
    }
    return Value::makeList(l);
  });
  r.exec(nodes, r.globals);
  return out;
}

} // namespace fm::chat
