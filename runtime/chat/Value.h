// The values a chat template computes with: Python's None, bool, int, float,
// str, list and dict (insertion-ordered), Jinja's Undefined and namespace,
// and callables, with Python's printing, truthiness and comparisons.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fm::chat {

struct Value;
using List = std::vector<Value>;
struct Dict;
struct Callable;

struct Value {
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict,
                    Namespace, Callable };
  Kind kind = Kind::Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s; // String; for Undefined, what was looked up (for messages)
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict; // Dict and Namespace
  std::shared_ptr<const Callable> fn;
  bool tuple = false; // a List that Python would have as a tuple (repr)

  static Value undefined(std::string what = {}) {
    Value v;
    v.s = std::move(what);
    return v;
  }
  static Value none() { return make(Kind::None); }
  static Value boolean(bool x) {
    Value v = make(Kind::Bool);
    v.b = x;
    return v;
  }
  static Value integer(int64_t x) {
    Value v = make(Kind::Int);
    v.i = x;
    return v;
  }
  static Value number(double x) {
    Value v = make(Kind::Float);
    v.f = x;
    return v;
  }
  static Value string(std::string x) {
    Value v = make(Kind::String);
    v.s = std::move(x);
    return v;
  }
  static Value makeList(List items = {}) {
    Value v = make(Kind::List);
    v.list = std::make_shared<List>(std::move(items));
    return v;
  }
  static Value makeTuple(List items) {
    Value v = makeList(std::move(items));
    v.tuple = true;
    return v;
  }
  static Value makeDict();
  static Value makeNamespace();
  static Value callable(std::shared_ptr<const Callable> f) {
    Value v = make(Kind::Callable);
    v.fn = std::move(f);
    return v;
  }

  bool isUndefined() const { return kind == Kind::Undefined; }
  bool isString() const { return kind == Kind::String; }
  bool isNumber() const {
    return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool;
  }
  bool isMapping() const { return kind == Kind::Dict; }
  /// Python's bool().
  bool truthy() const;
  /// Python's str() (Undefined prints as "").
  std::string str() const;
  /// Python's repr().
  std::string repr() const;
  /// The type name in error messages ("str", "int", "dict", ...).
  const char *typeName() const;

private:
  static Value make(Kind k) {
    Value v;
    v.kind = k;
    return v;
  }
};

/// An insertion-ordered str -> Value map (Python's dict with string keys).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value *find(const std::string &key) const {
    for (const auto &kv : items)
      if (kv.first == key)
        return &kv.second;
    return nullptr;
  }
  void set(const std::string &key, Value v) {
    for (auto &kv : items)
      if (kv.first == key) {
        kv.second = std::move(v);
        return;
      }
    items.emplace_back(key, std::move(v));
  }
};

/// Arguments of a call: positional, then keyword.
struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value *kw(const std::string &name) const {
    for (const auto &kv : keyword)
      if (kv.first == name)
        return &kv.second;
    return nullptr;
  }
};

/// A function, a bound method or a macro. Errors are thrown as RenderError
/// inside the renderer (never past the public API).
struct Callable {
  std::string name;
  std::function<Value(const Args &)> call;
};

/// Python's ==.
bool equal(const Value &a, const Value &b);
/// Python's <, for numbers, strings and lists; false with *ok = false when
/// the types do not compare.
bool less(const Value &a, const Value &b, bool *ok);

/// Python's repr() of a float.
std::string floatRepr(double d);
/// json.dumps(v, ensure_ascii=False, indent=..., sort_keys=...).
std::string toJson(const Value &v, int indent, bool sortKeys,
                   const std::string &itemSep, const std::string &keySep);

} // namespace fm::chat
