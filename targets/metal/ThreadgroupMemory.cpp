// Threadgroup memory of a SPIR-V entry point (ThreadgroupMemory.h): one
// pass over the module's instructions (types, constants, Workgroup
// variables, which function references which variable and calls which
// function), then the functions reachable from the entry point.
#include "targets/metal/ThreadgroupMemory.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace fm::msl {
namespace {

// SPIR-V opcodes and the Workgroup storage class (the unified1 grammar).
enum : uint32_t {
  kOpLine = 8,
  kOpExtInst = 12,
  kOpEntryPoint = 15,
  kOpTypeBool = 20,
  kOpTypeInt = 21,
  kOpTypeFloat = 22,
  kOpTypeVector = 23,
  kOpTypeMatrix = 24,
  kOpTypeArray = 28,
  kOpTypeStruct = 30,
  kOpTypePointer = 32,
  kOpConstant = 43,
  kOpSpecConstant = 50,
  kOpFunction = 54,
  kOpFunctionEnd = 56,
  kOpFunctionCall = 57,
  kOpVariable = 59,
  kOpLoad = 61,
  kOpStore = 62,
  kOpCopyMemory = 63,
  kOpCopyMemorySized = 64,
  kOpLoopMerge = 246,
  kOpSelectionMerge = 247,
  kOpSwitch = 251,
  kOpNoLine = 317,
  kWorkgroup = 4,
  kGLCompute = 5,
};

struct Type {
  uint32_t op = 0;
  std::vector<uint32_t> args; // the instruction's words after the result id
};

struct Layout {
  uint64_t size = 0, align = 1;
};

class Module {
public:
  Module(const uint32_t *words, size_t count) : w_(words), n_(count) {}

  bool parse(std::string *error) {
    if (n_ < 5 || w_[0] != 0x07230203u)
      return fail(error, "not a SPIR-V module (no magic number)");
    uint32_t fn = 0; // the function being read, 0 outside
    for (size_t at = 5; at < n_;) {
      const uint32_t op = w_[at] & 0xffffu, len = w_[at] >> 16;
      if (len == 0 || at + len > n_)
        return fail(error, "SPIR-V instruction at word " + std::to_string(at) +
                               " runs past the end of the module");
      const uint32_t *a = w_ + at + 1; // operands
      const uint32_t na = len - 1;
      switch (op) {
      case kOpEntryPoint:
        if (na >= 3 && a[0] == kGLCompute)
          entries_[literalString(a + 2, na - 2)] = a[1];
        break;
      case kOpTypeBool:
      case kOpTypeInt:
      case kOpTypeFloat:
      case kOpTypeVector:
      case kOpTypeMatrix:
      case kOpTypeArray:
      case kOpTypeStruct:
      case kOpTypePointer:
        if (na >= 1)
          types_[a[0]] = {op, std::vector<uint32_t>(a + 1, a + na)};
        break;
      case kOpConstant:
      case kOpSpecConstant:
        if (na >= 3)
          constants_[a[1]] = na >= 4 ? (uint64_t(a[3]) << 32 | a[2]) : a[2];
        break;
      case kOpFunction:
        if (na >= 2)
          fn = a[1];
        break;
      case kOpFunctionEnd:
        fn = 0;
        break;
      case kOpVariable:
        if (na >= 3 && a[2] == kWorkgroup)
          workgroup_[a[1]] = a[0];
        break;
      default:
        break;
      }
      if (fn != 0)
        noteReferences(fn, op, a, na);
      at += len;
    }
    return true;
  }

  bool bytesOf(const std::string &entry, uint64_t *bytes, std::string *error) {
    auto e = entries_.find(entry);
    if (e == entries_.end())
      return fail(error, "no GLCompute entry point '" + entry + "' in the module");
    std::set<uint32_t> seen{e->second}, vars;
    std::vector<uint32_t> todo{e->second};
    while (!todo.empty()) {
      const uint32_t f = todo.back();
      todo.pop_back();
      for (uint32_t v : uses_[f])
        vars.insert(v);
      for (uint32_t g : calls_[f])
        if (seen.insert(g).second)
          todo.push_back(g);
    }
    uint64_t total = 0;
    for (uint32_t v : vars) {
      const Type *ptr = type(workgroup_[v]);
      if (!ptr || ptr->op != kOpTypePointer || ptr->args.size() < 2)
        return fail(error, "Workgroup variable %" + std::to_string(v) +
                               " does not have a pointer type");
      Layout l;
      if (!layout(ptr->args[1], 0, &l, error))
        return false;
      total = (total + l.align - 1) / l.align * l.align + l.size;
      if (total > (uint64_t(1) << 40))
        return fail(error, "the Workgroup variables of '" + entry +
                               "' are larger than 2^40 bytes");
    }
    *bytes = total;
    return true;
  }

private:
  static bool fail(std::string *error, const std::string &why) {
    *error = why;
    return false;
  }

  std::string literalString(const uint32_t *a, uint32_t na) const {
    std::string s;
    for (uint32_t i = 0; i < na; ++i)
      for (int b = 0; b < 4; ++b) {
        const char c = char((a[i] >> (8 * b)) & 0xff);
        if (c == 0)
          return s;
        s.push_back(c);
      }
    return s;
  }

  /// Which ids an instruction of function `fn` may reference: every operand
  /// word, except the literals of the instructions that carry some (line
  /// numbers, loop/selection controls, switch cases, memory-access masks,
  /// extended-instruction numbers), so that a literal equal to a variable's
  /// id is not taken for a use. Over-counting elsewhere is conservative.
  void noteReferences(uint32_t fn, uint32_t op, const uint32_t *a, uint32_t na) {
    uint32_t first = 0, last = na; // operand words [first, last)
    switch (op) {
    case kOpLine:
    case kOpNoLine:
      return;
    case kOpLoopMerge:
    case kOpCopyMemory:
      last = std::min<uint32_t>(na, 2);
      break;
    case kOpSelectionMerge:
      last = std::min<uint32_t>(na, 1);
      break;
    case kOpSwitch:
      last = std::min<uint32_t>(na, 2);
      break;
    case kOpLoad:
      first = std::min<uint32_t>(na, 2);
      last = std::min<uint32_t>(na, 3);
      break;
    case kOpStore:
      last = std::min<uint32_t>(na, 2);
      break;
    case kOpCopyMemorySized:
      last = std::min<uint32_t>(na, 3);
      break;
    case kOpFunctionCall:
      if (na >= 3)
        calls_[fn].insert(a[2]);
      break;
    case kOpExtInst:
      if (na >= 4) {
        for (uint32_t i = 4; i < na; ++i)
          note(fn, a[i]);
        return;
      }
      break;
    default:
      break;
    }
    for (uint32_t i = first; i < last; ++i)
      note(fn, a[i]);
  }
  void note(uint32_t fn, uint32_t id) {
    if (workgroup_.count(id))
      uses_[fn].insert(id);
  }

  const Type *type(uint32_t id) const {
    auto it = types_.find(id);
    return it == types_.end() ? nullptr : &it->second;
  }

  /// The MSL size and alignment of type `id`.
  bool layout(uint32_t id, int depth, Layout *out, std::string *error) const {
    const Type *t = type(id);
    if (!t || depth > 32)
      return fail(error, "Workgroup type %" + std::to_string(id) + " is not sized");
    auto arg = [&](size_t i) { return i < t->args.size() ? t->args[i] : 0u; };
    switch (t->op) {
    case kOpTypeBool:
      *out = {1, 1};
      return true;
    case kOpTypeInt:
    case kOpTypeFloat: {
      const uint64_t b = arg(0) / 8;
      if (b == 0 || b > 8)
        break;
      *out = {b, b};
      return true;
    }
    case kOpTypeVector: {
      Layout c;
      if (!layout(arg(0), depth + 1, &c, error))
        return false;
      if (arg(1) < 2 || arg(1) > 16)
        break;
      const uint64_t n = arg(1) == 3 ? 4 : arg(1);
      *out = {c.size * n, c.size * n};
      return true;
    }
    case kOpTypeMatrix: {
      Layout c;
      if (!layout(arg(0), depth + 1, &c, error))
        return false;
      if (arg(1) < 2 || arg(1) > 16)
        break;
      *out = {c.size * arg(1), c.align};
      return true;
    }
    case kOpTypeArray: {
      Layout e;
      if (!layout(arg(0), depth + 1, &e, error))
        return false;
      auto len = constants_.find(arg(1));
      if (len == constants_.end())
        return fail(error, "Workgroup array type %" + std::to_string(id) +
                               ": its length %" + std::to_string(arg(1)) +
                               " is not a constant");
      const uint64_t stride = (e.size + e.align - 1) / e.align * e.align;
      if (stride != 0 && len->second > (uint64_t(1) << 40) / stride)
        return fail(error, "Workgroup array type %" + std::to_string(id) +
                               " is larger than 2^40 bytes");
      *out = {stride * len->second, e.align};
      return true;
    }
    case kOpTypeStruct: {
      Layout s{0, 1};
      for (uint32_t m : t->args) {
        Layout l;
        if (!layout(m, depth + 1, &l, error))
          return false;
        s.size = (s.size + l.align - 1) / l.align * l.align + l.size;
        s.align = std::max(s.align, l.align);
        if (s.size > (uint64_t(1) << 40))
          return fail(error, "Workgroup struct type %" + std::to_string(id) +
                                 " is larger than 2^40 bytes");
      }
      s.size = (s.size + s.align - 1) / s.align * s.align;
      *out = s;
      return true;
    }
    default:
      break;
    }
    return fail(error, "Workgroup type %" + std::to_string(id) + " is not sized");
  }

  const uint32_t *w_;
  size_t n_;
  std::map<std::string, uint32_t> entries_;     // name -> function id
  std::map<uint32_t, Type> types_;
  std::map<uint32_t, uint64_t> constants_;      // id -> integer value
  std::map<uint32_t, uint32_t> workgroup_;      // variable id -> pointer type id
  std::map<uint32_t, std::set<uint32_t>> uses_; // function -> Workgroup variables
  std::map<uint32_t, std::set<uint32_t>> calls_;
};

} // namespace

bool threadgroupBytes(const uint32_t *words, size_t count, const std::string &entry,
                      uint64_t *bytes, std::string *error) {
  Module m(words, count);
  return m.parse(error) && m.bytesOf(entry, bytes, error);
}

} // namespace fm::msl
