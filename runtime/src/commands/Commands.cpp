// The table of command kinds, and the helpers they share.
#include "commands/Command.h"

#include "base/JsonString.h"

#include <cstdio>

namespace fm::rt {

extern const CommandKind kEmbedCommand, kMatMulCommand, kAttentionCommand,
    kDispatchCommand, kCopyLastRowCommand, kMoeCommand, kAllReduceCommand,
    kPatchEmbedCommand, kLayerNormCommand, kVitAttentionCommand,
    kConv3x3Command, kAvgPoolCommand;

const CommandKind *commandKind(fa::Op op) {
  switch (op) {
  case fa::Op::Embed:
    return &kEmbedCommand;
  case fa::Op::MatMul:
    return &kMatMulCommand;
  case fa::Op::Attention:
    return &kAttentionCommand;
  case fa::Op::Dispatch:
    return &kDispatchCommand;
  case fa::Op::CopyLastRow:
    return &kCopyLastRowCommand;
  case fa::Op::Moe:
    return &kMoeCommand;
  case fa::Op::AllReduce:
    return &kAllReduceCommand;
  case fa::Op::PatchEmbed:
    return &kPatchEmbedCommand;
  case fa::Op::LayerNorm:
    return &kLayerNormCommand;
  case fa::Op::VitAttention:
    return &kVitAttentionCommand;
  case fa::Op::Conv3x3:
    return &kConv3x3Command;
  case fa::Op::AvgPool:
    return &kAvgPoolCommand;
  case fa::Op::NONE:
    break;
  }
  return nullptr;
}

namespace {
constexpr u64 kSaturated = ~u64(0);
u64 satAdd(u64 a, u64 b) { return a > kSaturated - b ? kSaturated : a + b; }
u64 satMul(u64 a, u64 b) {
  return a != 0 && b > kSaturated / a ? kSaturated : a * b;
}
// One past the last byte a `rows`-row buffer touches.
u64 bufferEnd(const fa::BufferRef &b, u64 rows) {
  return satAdd(satAdd(b.offset(), satMul(rows - 1, b.stride())),
                satMul(b.width(), 4));
}
} // namespace

bool mayOverlap(const fa::BufferRef &a, u64 rowsA, const fa::BufferRef &b,
                u64 rowsB) {
  if (a.width() == 0 || b.width() == 0)
    return false;
  const u64 endA = bufferEnd(a, rowsA), endB = bufferEnd(b, rowsB);
  if (endA <= b.offset() || endB <= a.offset())
    return false;
  if (rowsA <= 1 && rowsB <= 1)
    return true; // Both are single spans, and the spans meet.
  // A one-row buffer fits any row layout; compare residues modulo a shared
  // stride: every byte of a buffer lies in its residue range.
  const u64 s = rowsA > 1 ? a.stride() : b.stride();
  if ((rowsA > 1 && a.stride() != s) || (rowsB > 1 && b.stride() != s) ||
      s == 0)
    return true;
  const u64 ra = a.offset() % s, rb = b.offset() % s;
  const u64 wa = satMul(a.width(), 4), wb = satMul(b.width(), 4);
  return (rb + s - ra) % s < wa || (ra + s - rb) % s < wb;
}

kernels::QuantFormat quantFormatOf(const fa::Weight &weight) {
  kernels::QuantFormat f;
  f.bits = weight.dtype() == fa::DType::Q2   ? 2
           : weight.dtype() == fa::DType::Q4 ? 4
                                             : 8;
  // An out-of-range group or grid stays visible to isValidQuantFormat.
  f.group = weight.group() <= 1024 ? static_cast<int>(weight.group()) : 0;
  f.grid = static_cast<kernels::QuantGrid>(weight.grid());
  return f;
}

std::string describe(const fa::BufferRef &b) {
  return "(offset " + std::to_string(b.offset()) + ", stride " +
         std::to_string(b.stride()) + ", width " + std::to_string(b.width()) +
         ")";
}

std::string shapeString(const flatbuffers::Vector<int64_t> *shape) {
  std::string s = "[";
  for (flatbuffers::uoffset_t i = 0; i < shape->size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape->Get(i));
  return s + "]";
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {
// "" when weight `index` exists and is f32, else why not.
std::string f32Problem(const VerifyContext &c, uint32_t index,
                       const std::string &role) {
  if (std::string p = c.weightIndexProblem(index); !p.empty())
    return role + ": " + p;
  const fa::Weight *w = c.root().weights()->Get(index);
  if (w->dtype() != fa::DType::F32)
    return role + " " + c.weightName(index) + " is " + dtypeName(w->dtype()) +
           " (this kernel reads f32)";
  return {};
}
} // namespace

std::string f32FloatsProblem(const VerifyContext &c, uint32_t index,
                             const std::string &role, u64 elements) {
  if (std::string p = f32Problem(c, index, role); !p.empty())
    return p;
  const fa::Weight *w = c.root().weights()->Get(index);
  u64 n = 1;
  for (int64_t d : *w->shape())
    n = satMul(n, static_cast<u64>(d));
  if (n != elements)
    return role + " " + c.weightName(index) + " has shape " +
           shapeString(w->shape()) + " (" + std::to_string(n) +
           " floats), expected " + std::to_string(elements) + " floats";
  return {};
}

std::string f32WeightProblem(const VerifyContext &c, uint32_t index,
                             const std::string &role,
                             const std::vector<int64_t> &shape) {
  if (std::string p = f32Problem(c, index, role); !p.empty())
    return p;
  const fa::Weight *w = c.root().weights()->Get(index);
  if (std::vector<int64_t>(w->shape()->begin(), w->shape()->end()) != shape)
    return role + " " + c.weightName(index) + " has shape " +
           shapeString(w->shape()) + ", expected " + shapeString(shape);
  return {};
}

std::string bufferText(const fa::BufferRef &b, bool oneRow) {
  return "buf@" + std::to_string(b.offset()) + "[" + (oneRow ? "1" : "rows") +
         "x" + std::to_string(b.width()) + "]";
}

std::string JsonMembers::quote(const std::string &s) {
  std::string out;
  appendJsonString(out, s);
  return out;
}

std::string JsonMembers::buffer(const fa::BufferRef &b) {
  return "{\"offset\": " + std::to_string(b.offset()) +
         ", \"stride\": " + std::to_string(b.stride()) +
         ", \"width\": " + std::to_string(b.width()) + "}";
}

JsonMembers &JsonMembers::addRaw(const char *name, const std::string &value) {
  if (!s_.empty())
    s_ += ", ";
  s_ += quote(name) + ": " + value;
  return *this;
}

JsonMembers &JsonMembers::add(const char *name, const std::string &value) {
  return addRaw(name, quote(value));
}

JsonMembers &JsonMembers::add(const char *name, int64_t value) {
  return addRaw(name, std::to_string(value));
}

JsonMembers &JsonMembers::add(const char *name, bool value) {
  return addRaw(name, value ? "true" : "false");
}

JsonMembers &JsonMembers::add(const char *name, double value) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", value);
  return addRaw(name, buf);
}

JsonMembers &JsonMembers::add(const char *name, const fa::BufferRef &b) {
  return addRaw(name, buffer(b));
}

JsonMembers &JsonMembers::add(const char *name,
                              const std::vector<std::string> &values) {
  std::string list = "[";
  for (size_t i = 0; i < values.size(); ++i)
    list += (i ? ", " : "") + quote(values[i]);
  return addRaw(name, list + "]");
}

} // namespace fm::rt
