// The .fmb loader. Any bytes either load into an Artifact the executor can
// run without further checks or give an error that names the file and the
// element at fault; nothing here may crash on a bad file.
//
// What verify() establishes, in order:
//   - the file holds a size-prefixed FlatBuffer with identifier "FMB1" that
//     passes the FlatBuffers verifier, with schema_version 1;
//   - the data section [align64(4 + N), + data_size) lies in the file, and
//     every weight is 64-aligned in it, inside it, and sized as its shape;
//   - a Q2/Q4/Q8 weight is 2-D [rows, inputs] with group 32, 64 or 128
//     dividing its inputs, a known grid, and rows * packedRowBytes bytes;
//   - every cache is f32 or i8 with non-zero sizes that fit in memory;
//   - every program has a unique phase, max_rows >= 1, a logits buffer of
//     vocab_size columns, and every command is well formed: indices in range,
//     buffers inside the arena (at max_rows rows, or 1 for last_row_only),
//     shapes consistent with the kernels' contracts, no in/out overlap;
//     weights of dtypes the command's kernels read (MatMul and Embed: f32,
//     f16 or quantized; Moe: the router's float dtype throughout, or any of
//     those once one weight is quantized); an Attention over an i8 cache
//     names 0-d f32 k_scale/v_scale weights, one over an f32 cache none;
//   - devices >= 1; every command's block, track and device are -1 or in
//     range (num_track_blocks, num_tracks, devices), block and track are set
//     together, and AllReduce commands run between blocks on every rank;
//   - within a track section (consecutive commands of one block) no command
//     of one track writes a buffer that another track uses, and no two
//     tracks use one cache slot, unless the two tracks run on different
//     devices (so never in one process);
//   - an executable exists, with functions for every Dispatch, when any
//     program dispatches.
#include "Artifact.h"

#include "QuantMoe.h"
#include "kernels/moe.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define FM_HAVE_MMAP 1
#endif

namespace fm::rt {

namespace fa = fm::artifact;

uint64_t fnv1a64(const uint8_t *data, size_t size, uint64_t hash) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

uint64_t dtypeSize(fa::DType dtype) {
  switch (dtype) {
  case fa::DType::F32:
    return 4;
  case fa::DType::F16:
  case fa::DType::BF16:
    return 2;
  case fa::DType::I8:
    return 1;
  case fa::DType::Q2:
  case fa::DType::Q4:
  case fa::DType::Q8:
    return 0; // Sized per row: packedRowBytes.
  }
  return 0;
}

std::string dtypeName(fa::DType dtype) {
  switch (dtype) {
  case fa::DType::F32:
    return "f32";
  case fa::DType::F16:
    return "f16";
  case fa::DType::BF16:
    return "bf16";
  case fa::DType::I8:
    return "i8";
  case fa::DType::Q2:
    return "q2";
  case fa::DType::Q4:
    return "q4";
  case fa::DType::Q8:
    return "q8";
  }
  return "dtype " + std::to_string(static_cast<unsigned>(dtype));
}

bool isQuantized(fa::DType dtype) {
  return dtype == fa::DType::Q2 || dtype == fa::DType::Q4 ||
         dtype == fa::DType::Q8;
}

bool moeHasQuantizedWeights(const fa::Artifact &root, const fa::Moe &op) {
  auto quantized = [&](int64_t index) {
    return index >= 0 && uint64_t(index) < root.weights()->size() &&
           isQuantized(root.weights()->Get(uint32_t(index))->dtype());
  };
  bool any = quantized(op.router()) || quantized(op.shared_gate()) ||
             quantized(op.shared_up()) || quantized(op.shared_down()) ||
             quantized(op.shared_expert_gate());
  for (const auto *list : {op.gate(), op.up(), op.down()})
    for (uint32_t index : *list)
      any |= quantized(index);
  return any;
}

kernels::QuantFormat quantFormat(const fa::Weight &weight) {
  kernels::QuantFormat f;
  f.bits = weight.dtype() == fa::DType::Q2   ? 2
           : weight.dtype() == fa::DType::Q4 ? 4
                                             : 8;
  // An out-of-range group or grid stays visible to isValidQuantFormat.
  f.group = weight.group() <= 1024 ? static_cast<int>(weight.group()) : 0;
  f.grid = static_cast<kernels::QuantGrid>(weight.grid());
  return f;
}

namespace {

using u64 = uint64_t;

// Caches and arenas are allocated from these counts; anything larger is a
// corrupt file, not a model (and would overflow size_t arithmetic).
constexpr u64 kMaxFloats = u64(1) << 44;

u64 align64(u64 x) { return (x + kDataAlignment - 1) & ~(kDataAlignment - 1); }

// Saturating arithmetic: a sum or product that does not fit is UINT64_MAX,
// which every bound below rejects (portable where __int128 is not).
constexpr u64 kSaturated = ~u64(0);
u64 satAdd(u64 a, u64 b) { return a > kSaturated - b ? kSaturated : a + b; }
u64 satMul(u64 a, u64 b) {
  return a != 0 && b > kSaturated / a ? kSaturated : a * b;
}

std::string quoted(const flatbuffers::String *s) {
  return s ? "'" + s->str() + "'" : std::string("''");
}

std::string describe(const fa::BufferRef &b) {
  return "(offset " + std::to_string(b.offset()) + ", stride " +
         std::to_string(b.stride()) + ", width " + std::to_string(b.width()) +
         ")";
}

// "command 12 (model.layers.3.self_attn)", or without the layer name when
// there is none.
std::string commandName(const fa::Command &command, flatbuffers::uoffset_t i) {
  std::string s = "command " + std::to_string(i);
  if (command.layer() && command.layer()->size() > 0)
    s += " (" + command.layer()->str() + ")";
  return s;
}

std::string shapeString(const flatbuffers::Vector<int64_t> *shape) {
  std::string s = "[";
  for (flatbuffers::uoffset_t i = 0; i < shape->size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape->Get(i));
  return s + "]";
}

// One past the last float a `rows`-row buffer touches.
u64 bufferEnd(const fa::BufferRef &b, u64 rows) {
  return satAdd(satAdd(b.offset(), satMul(rows - 1, b.stride())), b.width());
}

// Whether two buffers may share a float. Exact for disjoint spans and for
// column slices of one row layout (same stride); conservative otherwise.
bool mayOverlap(const fa::BufferRef &a, u64 rowsA, const fa::BufferRef &b,
                u64 rowsB) {
  if (a.width() == 0 || b.width() == 0)
    return false;
  u64 endA = bufferEnd(a, rowsA), endB = bufferEnd(b, rowsB);
  if (endA <= b.offset() || endB <= a.offset())
    return false;
  if (rowsA <= 1 && rowsB <= 1)
    return true; // Both are single spans, and the spans meet.
  // A one-row buffer fits any row layout; compare residues modulo a shared
  // stride: every float of a buffer lies in its residue range.
  u64 s = rowsA > 1 ? a.stride() : b.stride();
  if ((rowsA > 1 && a.stride() != s) || (rowsB > 1 && b.stride() != s) ||
      s == 0)
    return true;
  u64 ra = a.offset() % s, rb = b.offset() % s;
  return (rb + s - ra) % s < a.width() || (ra + s - rb) % s < b.width();
}

// Checks the parts of an artifact that the executor relies on. Each check
// returns a Status whose message names the file and the element.
class Checker {
public:
  Checker(const std::string &name, const fa::Artifact &root, u64 dataSize)
      : name_(name), root_(root), dataSize_(dataSize) {}

  Status run(bool *hasDispatch);

private:
  Status fail(const std::string &where, const std::string &what) const {
    return Status::error(name_ + ": " + where + ": " + what);
  }

  Status checkWeights();
  Status checkQuantWeight(const fa::Weight &w, const std::string &where);
  Status checkCaches();
  Status checkProgram(const fa::Program &program, const std::string &where);
  Status checkCommand(const fa::Program &program, const fa::Command &command,
                      const std::string &where);
  Status checkPlacement(const fa::Command &command, const std::string &where);
  Status checkKvScales(const fa::Attention &op, const fa::KvCache &cache,
                       const std::string &where);
  Status checkMoe(const fa::Moe &op, u64 rows, const std::string &where);
  Status checkSection(const fa::Program &program, flatbuffers::uoffset_t begin,
                      flatbuffers::uoffset_t end, const std::string &where);
  Status checkExecutable();

  // Empty when `b` is usable for `rows` rows, else why not.
  std::string bufferProblem(const char *what, const fa::BufferRef &b,
                            u64 rows) const {
    if (rows > 1 && b.width() > b.stride())
      return std::string(what) + " buffer " + describe(b) +
             ": width exceeds stride";
    u64 end = bufferEnd(b, rows);
    if (end > arenaFloats_)
      return std::string(what) + " buffer " + describe(b) + " with " +
             std::to_string(rows) + (rows == 1 ? " row" : " rows") +
             " ends at float " + std::to_string(end) +
             ", past the arena of " + std::to_string(arenaFloats_) + " floats";
    return {};
  }

  std::string weightIndexProblem(uint32_t index) const {
    if (index < numWeights_)
      return {};
    return "weight index " + std::to_string(index) + " out of range (" +
           std::to_string(numWeights_) + " weights)";
  }

  std::string cacheSlotProblem(uint32_t cache, uint32_t slot) const {
    if (cache >= numCaches_)
      return "cache index " + std::to_string(cache) + " out of range (" +
             std::to_string(numCaches_) + " caches)";
    const fa::KvCache *c = root_.caches()->Get(cache);
    if (slot >= c->slots())
      return "slot " + std::to_string(slot) + " out of range (cache " +
             quoted(c->name()) + " has " + std::to_string(c->slots()) +
             " slots)";
    return {};
  }

  std::string weightName(uint32_t index) const {
    return "weight " + std::to_string(index) + " (" +
           quoted(root_.weights()->Get(index)->name()) + ")";
  }

  const std::string &name_;
  const fa::Artifact &root_;
  u64 dataSize_;
  u64 numWeights_ = 0, numCaches_ = 0, numFunctions_ = 0;
  u64 arenaFloats_ = 0; // Of the program being checked.
  bool hasExecutable_ = false;
};

Status Checker::run(bool *hasDispatch) {
  numWeights_ = root_.weights()->size();
  numCaches_ = root_.caches()->size();
  hasExecutable_ = root_.executable() != nullptr;
  numFunctions_ = hasExecutable_ ? root_.executable()->functions()->size() : 0;
  FM_RETURN_IF_ERROR(checkWeights());
  FM_RETURN_IF_ERROR(checkCaches());

  if (root_.devices() == 0)
    return Status::error(name_ + ": devices is 0 (a model runs on at least one)");

  const auto *programs = root_.programs();
  if (programs->size() > 0 && root_.vocab_size() == 0)
    return Status::error(name_ + ": vocab_size is 0");
  std::set<std::string> phases;
  for (flatbuffers::uoffset_t p = 0; p < programs->size(); ++p) {
    const fa::Program *program = programs->Get(p);
    std::string where = "program " + quoted(program->phase());
    if (!phases.insert(program->phase()->str()).second)
      return fail(where, "a second program with this phase");
    FM_RETURN_IF_ERROR(checkProgram(*program, where));
  }

  *hasDispatch = false;
  for (const fa::Program *program : *programs)
    for (const fa::Command *command : *program->commands())
      if (command->op_type() == fa::Op::Dispatch)
        *hasDispatch = true;
  if (*hasDispatch)
    FM_RETURN_IF_ERROR(checkExecutable());
  return Status::ok();
}

Status Checker::checkWeights() {
  const auto *weights = root_.weights();
  for (flatbuffers::uoffset_t i = 0; i < weights->size(); ++i) {
    const fa::Weight *w = weights->Get(i);
    std::string where = weightName(i);
    // FlatBuffers 2.0's verifier checks a vector's length field for 4-byte
    // alignment, not its 8-byte elements: a crafted file could make every
    // later read of the shape a misaligned load.
    // (An empty shape has no elements to read, and FlatBufferBuilder does
    // not align it.)
    if (w->shape()->size() > 0 &&
        reinterpret_cast<uintptr_t>(w->shape()->data()) % alignof(int64_t) != 0)
      return fail(where, "corrupt: the shape is not 8-byte aligned");
    const bool quantized = isQuantized(w->dtype());
    u64 elemSize = dtypeSize(w->dtype());
    if (elemSize == 0 && !quantized)
      return fail(where, "unknown " + dtypeName(w->dtype()));
    u64 elements = 1;
    for (int64_t dim : *w->shape()) {
      if (dim < 0)
        return fail(where, "shape " + shapeString(w->shape()) +
                               " has a negative dimension");
      elements = satMul(elements, static_cast<u64>(dim));
      if (elements > (u64(1) << 62))
        return fail(where, "shape " + shapeString(w->shape()) + " is too large");
    }
    if (w->offset() % kDataAlignment != 0)
      return fail(where, "offset " + std::to_string(w->offset()) +
                             " is not a multiple of 64");
    if (w->offset() > dataSize_ || w->size() > dataSize_ - w->offset())
      return fail(where, "bytes [" + std::to_string(w->offset()) + ", " +
                             std::to_string(satAdd(w->offset(), w->size())) +
                             ") lie outside the data section (" +
                             std::to_string(dataSize_) + " bytes)");
    if (quantized) {
      FM_RETURN_IF_ERROR(checkQuantWeight(*w, where));
      continue;
    }
    u64 expected = elements * elemSize; // < 2^62 * 4
    if (expected != w->size())
      return fail(where, "size " + std::to_string(w->size()) +
                             " bytes does not match shape " +
                             shapeString(w->shape()) + " of " +
                             dtypeName(w->dtype()) + " (" +
                             std::to_string(expected) +
                             " bytes)");
  }
  return Status::ok();
}

// A Q2/Q4/Q8 weight: an nn.Linear [rows][inputs] of packed rows
// (kernels/qformat.h), whole groups per row.
Status Checker::checkQuantWeight(const fa::Weight &w, const std::string &where) {
  const auto *shape = w.shape();
  const std::string type = dtypeName(w.dtype());
  if (shape->size() != 2)
    return fail(where, type + " weight has shape " + shapeString(shape) +
                           ", expected 2-D [rows, inputs]");
  if (w.group() != 32 && w.group() != 64 && w.group() != 128)
    return fail(where, type + " group " + std::to_string(w.group()) +
                           " is not 32, 64 or 128");
  if (w.grid() != fa::QuantGrid::Balanced && w.grid() != fa::QuantGrid::Affine)
    return fail(where, type + " has unknown grid " +
                           std::to_string(static_cast<unsigned>(w.grid())));
  const u64 rows = static_cast<u64>(shape->Get(0));
  const u64 inputs = static_cast<u64>(shape->Get(1));
  if (inputs % w.group() != 0)
    return fail(where, type + " weight has " + std::to_string(inputs) +
                           " inputs per row, not a multiple of its group " +
                           std::to_string(w.group()));
  // packedRowBytes, without its asserts and in saturating arithmetic: the
  // row count alone may be anything the shape check let through.
  const kernels::QuantFormat f = quantFormat(w);
  const u64 groups = inputs / w.group();
  const u64 rowBytes =
      satAdd(inputs / 8 * f.bits,
             satMul(groups, f.grid == kernels::QuantGrid::Affine ? 4 : 2));
  const u64 expected = satMul(rows, rowBytes);
  if (expected != w.size())
    return fail(where, "size " + std::to_string(w.size()) +
                           " bytes does not match shape " + shapeString(shape) +
                           " of " + type + " (group " +
                           std::to_string(w.group()) + ", " +
                           (f.grid == kernels::QuantGrid::Affine ? "affine"
                                                                  : "balanced") +
                           ": " + std::to_string(expected) + " bytes)");
  return Status::ok();
}

Status Checker::checkCaches() {
  const auto *caches = root_.caches();
  for (flatbuffers::uoffset_t i = 0; i < caches->size(); ++i) {
    const fa::KvCache *c = caches->Get(i);
    std::string where = "cache " + std::to_string(i) + " (" + quoted(c->name()) + ")";
    if (c->dtype() != fa::DType::F32 && c->dtype() != fa::DType::I8)
      return fail(where, "dtype " + dtypeName(c->dtype()) +
                             " is not supported (this runtime keeps f32 or i8 "
                             "caches)");
    if (c->kv_heads() == 0 || c->head_dim() == 0 || c->capacity() == 0)
      return fail(where, "kv_heads, head_dim and capacity must be non-zero (" +
                             std::to_string(c->kv_heads()) + ", " +
                             std::to_string(c->head_dim()) + ", " +
                             std::to_string(c->capacity()) + ")");
    u64 bytes = satMul(satMul(satMul(satMul(satMul(c->slots(), 2),
                                            c->capacity()),
                                     c->kv_heads()),
                              c->head_dim()),
                       dtypeSize(c->dtype()));
    if (bytes > kMaxFloats * sizeof(float))
      return fail(where, "needs " + std::to_string(bytes) +
                             " bytes, more than this runtime allocates");
  }
  return Status::ok();
}

Status Checker::checkProgram(const fa::Program &program,
                             const std::string &where) {
  if (program.max_rows() == 0)
    return fail(where, "max_rows is 0");
  if (program.arena_floats() > kMaxFloats)
    return fail(where, "arena of " + std::to_string(program.arena_floats()) +
                           " floats is more than this runtime allocates");
  arenaFloats_ = program.arena_floats();
  u64 logitRows = program.logits_last_row_only() ? 1 : program.max_rows();
  const fa::BufferRef &logits = *program.logits();
  if (logits.width() != root_.vocab_size())
    return fail(where, "logits width " + std::to_string(logits.width()) +
                           " is not vocab_size " +
                           std::to_string(root_.vocab_size()));
  if (std::string p = bufferProblem("logits", logits, logitRows); !p.empty())
    return fail(where, p);

  const auto *commands = program.commands();
  for (flatbuffers::uoffset_t i = 0; i < commands->size(); ++i) {
    const fa::Command *command = commands->Get(i);
    std::string at = where + " " + commandName(*command, i);
    FM_RETURN_IF_ERROR(checkPlacement(*command, at));
    FM_RETURN_IF_ERROR(checkCommand(program, *command, at));
  }
  // Track sections: runs of commands of one block.
  for (flatbuffers::uoffset_t i = 0; i < commands->size();) {
    const int32_t block = commands->Get(i)->block();
    flatbuffers::uoffset_t end = i + 1;
    if (block >= 0) {
      while (end < commands->size() && commands->Get(end)->block() == block)
        ++end;
      FM_RETURN_IF_ERROR(checkSection(program, i, end, where));
    }
    i = end;
  }
  return Status::ok();
}

Status Checker::checkPlacement(const fa::Command &command,
                               const std::string &where) {
  const int32_t block = command.block(), track = command.track(),
                device = command.device();
  for (auto [what, value] : {std::pair<const char *, int32_t>{"block", block},
                             {"track", track},
                             {"device", device}})
    if (value < -1)
      return fail(where, std::string(what) + " " + std::to_string(value) +
                             " is invalid (-1 or an index)");
  if ((block >= 0) != (track >= 0))
    return fail(where, "block " + std::to_string(block) + " with track " +
                           std::to_string(track) +
                           ": a command of a track block names both");
  if (block >= 0 && u64(block) >= root_.num_track_blocks())
    return fail(where, "block " + std::to_string(block) + " out of range (" +
                           std::to_string(root_.num_track_blocks()) +
                           " track blocks)");
  if (track >= 0 && u64(track) >= root_.num_tracks())
    return fail(where, "track " + std::to_string(track) + " out of range (" +
                           std::to_string(root_.num_tracks()) + " tracks)");
  if (device >= 0 && u64(device) >= root_.devices())
    return fail(where, "device " + std::to_string(device) +
                           " out of range (the model is partitioned for " +
                           std::to_string(root_.devices()) +
                           (root_.devices() == 1 ? " device)" : " devices)"));
  if (command.op_type() == fa::Op::AllReduce) {
    if (block >= 0)
      return fail(where, "an AllReduce cannot be inside track block " +
                             std::to_string(block) +
                             ": collectives run between blocks");
    if (device >= 0)
      return fail(where, "an AllReduce runs on every rank (device -1), not "
                         "only on device " +
                             std::to_string(device));
  }
  return Status::ok();
}

namespace {

// One buffer use of a command in a track section.
struct Access {
  u64 lo = 0, hi = 0; // floats [lo, hi) that the buffer may touch
  const fa::BufferRef *ref = nullptr;
  u64 rows = 0;
  int32_t track = 0, device = 0;
  bool write = false;
  flatbuffers::uoffset_t command = 0;
  const char *what = "";
};

// Whether commands of devices a and b can run in one process.
bool sameProcess(int32_t a, int32_t b) { return a < 0 || b < 0 || a == b; }

} // namespace

// Tracks of a section run concurrently: a buffer that one track writes must
// not be used by another, and a cache slot belongs to one track. Reads may
// be shared (every track reads the block's input). The schema does not say
// which arguments generated code writes: Dispatch buffers count as reads
// here, and the compiler's guarantee covers them.
Status Checker::checkSection(const fa::Program &program,
                             flatbuffers::uoffset_t begin,
                             flatbuffers::uoffset_t end,
                             const std::string &where) {
  const auto *commands = program.commands();
  std::vector<Access> accesses;
  struct SlotUse {
    uint32_t cache, slot;
    int32_t track, device;
    flatbuffers::uoffset_t command;
  };
  std::vector<SlotUse> slots;
  for (flatbuffers::uoffset_t i = begin; i < end; ++i) {
    const fa::Command &c = *commands->Get(i);
    const u64 rows = c.last_row_only() ? 1 : program.max_rows();
    auto use = [&](const char *what, const fa::BufferRef *b, bool write,
                   u64 r) {
      if (!b || b->width() == 0)
        return;
      Access a;
      a.lo = b->offset();
      a.hi = bufferEnd(*b, r);
      a.ref = b;
      a.rows = r;
      a.track = c.track();
      a.device = c.device();
      a.write = write;
      a.command = i;
      a.what = what;
      accesses.push_back(a);
    };
    auto slot = [&](uint32_t cache, uint32_t s) {
      slots.push_back({cache, s, c.track(), c.device(), i});
    };
    switch (c.op_type()) {
    case fa::Op::Embed:
      use("out", c.op_as_Embed()->out(), true, rows);
      break;
    case fa::Op::MatMul:
      use("x", c.op_as_MatMul()->x(), false, rows);
      use("y", c.op_as_MatMul()->y(), true, rows);
      break;
    case fa::Op::Attention:
      use("q", c.op_as_Attention()->q(), false, rows);
      use("out", c.op_as_Attention()->out(), true, rows);
      slot(c.op_as_Attention()->cache(), c.op_as_Attention()->slot());
      break;
    case fa::Op::Dispatch:
      for (const fa::Arg *arg : *c.op_as_Dispatch()->args()) {
        if (arg->kind() == fa::ArgKind::Buffer)
          use("argument", arg->buffer(), false, rows);
        else if (arg->kind() != fa::ArgKind::Weight)
          slot(arg->index(), arg->slot());
      }
      break;
    case fa::Op::CopyLastRow:
      use("src", c.op_as_CopyLastRow()->src(), false, rows);
      use("dst", c.op_as_CopyLastRow()->dst(), true, 1);
      break;
    case fa::Op::Moe:
      use("x", c.op_as_Moe()->x(), false, rows);
      use("y", c.op_as_Moe()->y(), true, rows);
      break;
    default:
      break; // AllReduce is rejected inside blocks.
    }
  }

  auto name = [&](flatbuffers::uoffset_t i) {
    return commandName(*commands->Get(i), i) + " of track " +
           std::to_string(commands->Get(i)->track());
  };
  const std::string block =
      where + " block " + std::to_string(commands->Get(begin)->block());
  const std::string why =
      ": the tracks of a block run concurrently and need disjoint buffers";

  // By slot, then command order: the uses of one slot are neighbors.
  std::sort(slots.begin(), slots.end(), [](const SlotUse &a, const SlotUse &b) {
    return a.cache != b.cache   ? a.cache < b.cache
           : a.slot != b.slot   ? a.slot < b.slot
                                : a.command < b.command;
  });
  for (size_t i = 0; i < slots.size(); ++i)
    for (size_t j = i; j-- > 0 && slots[j].cache == slots[i].cache &&
                       slots[j].slot == slots[i].slot;) {
      const SlotUse &a = slots[j], &b = slots[i];
      if (a.track != b.track && sameProcess(a.device, b.device))
        return Status::error(
            name_ + ": " + block + ": " + name(b.command) + " uses cache " +
            std::to_string(b.cache) + " slot " + std::to_string(b.slot) +
            " of " + name(a.command) + ": the tracks of a block run "
            "concurrently and need their own caches");
    }

  // A sweep over the accesses by start: each is compared with those that
  // start before it and are still open.
  std::sort(accesses.begin(), accesses.end(),
            [](const Access &a, const Access &b) {
              return a.lo < b.lo || (a.lo == b.lo && a.command < b.command);
            });
  std::vector<const Access *> open;
  for (const Access &a : accesses) {
    open.erase(std::remove_if(open.begin(), open.end(),
                              [&](const Access *b) { return b->hi <= a.lo; }),
               open.end());
    for (const Access *b : open) {
      if (b->track == a.track || !(a.write || b->write) ||
          !sameProcess(a.device, b->device) ||
          !mayOverlap(*a.ref, a.rows, *b->ref, b->rows))
        continue;
      const Access &first = a.command < b->command ? a : *b;
      const Access &second = a.command < b->command ? *b : a;
      return Status::error(name_ + ": " + block + ": " + name(second.command) +
                           (second.write ? " writes " : " reads ") +
                           second.what + " buffer " + describe(*second.ref) +
                           ", which overlaps " + first.what + " buffer " +
                           describe(*first.ref) + " of " + name(first.command) +
                           why);
    }
    open.push_back(&a);
  }
  return Status::ok();
}

Status Checker::checkCommand(const fa::Program &program,
                             const fa::Command &command,
                             const std::string &where) {
  const u64 rows = command.last_row_only() ? 1 : program.max_rows();
  auto buffer = [&](const char *what, const fa::BufferRef &b, u64 r) {
    std::string p = bufferProblem(what, b, r);
    return p.empty() ? Status::ok() : fail(where, p);
  };

  switch (command.op_type()) {
  case fa::Op::Embed: {
    const fa::Embed &op = *command.op_as_Embed();
    if (std::string p = weightIndexProblem(op.table_weight()); !p.empty())
      return fail(where, p);
    const fa::Weight *w = root_.weights()->Get(op.table_weight());
    std::string table = "embedding table " + weightName(op.table_weight());
    if (w->dtype() != fa::DType::F32 && w->dtype() != fa::DType::F16 &&
        !isQuantized(w->dtype()))
      return fail(where, table + " is " + dtypeName(w->dtype()) +
                             " (embed reads f32, f16, q2, q4 or q8)");
    if (w->shape()->size() != 2 || w->shape()->Get(0) != root_.vocab_size() ||
        w->shape()->Get(1) != op.out()->width())
      return fail(where, table + " has shape " + shapeString(w->shape()) +
                             ", expected [" +
                             std::to_string(root_.vocab_size()) + ", " +
                             std::to_string(op.out()->width()) +
                             "] (vocab_size, out width)");
    return buffer("out", *op.out(), rows);
  }

  case fa::Op::MatMul: {
    const fa::MatMul &op = *command.op_as_MatMul();
    if (op.weights()->size() == 0)
      return fail(where, "matmul has no weights");
    // Each weight runs on the kernel of its own dtype (f32, f16 or a packed
    // format), so the weights of one command may differ in dtype.
    u64 totalRows = 0;
    for (flatbuffers::uoffset_t j = 0; j < op.weights()->size(); ++j) {
      uint32_t index = op.weights()->Get(j);
      if (std::string p = weightIndexProblem(index); !p.empty())
        return fail(where, p);
      const fa::Weight *w = root_.weights()->Get(index);
      if (w->dtype() != fa::DType::F32 && w->dtype() != fa::DType::F16 &&
          !isQuantized(w->dtype()))
        return fail(where, weightName(index) + " is " + dtypeName(w->dtype()) +
                               " (matmul reads f32, f16, q2, q4 or q8 weights)");
      if (w->shape()->size() != 2 || w->shape()->Get(1) != op.k())
        return fail(where, weightName(index) + " has shape " +
                               shapeString(w->shape()) + ", expected [rows, " +
                               std::to_string(op.k()) + "] (k = " +
                               std::to_string(op.k()) + ")");
      totalRows = satAdd(totalRows, static_cast<u64>(w->shape()->Get(0)));
    }
    if (totalRows != op.n())
      return fail(where, "the weights have " +
                             std::to_string(totalRows) +
                             " rows in all but n is " + std::to_string(op.n()));
    if (op.x()->width() != op.k())
      return fail(where, "x width " + std::to_string(op.x()->width()) +
                             " is not k " + std::to_string(op.k()));
    if (op.y()->width() != op.n())
      return fail(where, "y width " + std::to_string(op.y()->width()) +
                             " is not n " + std::to_string(op.n()));
    FM_RETURN_IF_ERROR(buffer("x", *op.x(), rows));
    FM_RETURN_IF_ERROR(buffer("y", *op.y(), rows));
    if (mayOverlap(*op.x(), rows, *op.y(), rows))
      return fail(where, "y buffer " + describe(*op.y()) +
                             " overlaps x buffer " + describe(*op.x()));
    return Status::ok();
  }

  case fa::Op::Attention: {
    const fa::Attention &op = *command.op_as_Attention();
    if (op.heads() == 0 || op.kv_heads() == 0 || op.head_dim() == 0)
      return fail(where, "heads, kv_heads and head_dim must be non-zero (" +
                             std::to_string(op.heads()) + ", " +
                             std::to_string(op.kv_heads()) + ", " +
                             std::to_string(op.head_dim()) + ")");
    if (op.heads() % op.kv_heads() != 0)
      return fail(where, std::to_string(op.heads()) +
                             " heads are not a multiple of " +
                             std::to_string(op.kv_heads()) + " kv_heads");
    u64 qWidth = u64(op.heads()) * op.head_dim();
    if (op.q()->width() != qWidth || op.out()->width() != qWidth)
      return fail(where, "q width " + std::to_string(op.q()->width()) +
                             " and out width " +
                             std::to_string(op.out()->width()) +
                             " must be heads * head_dim = " +
                             std::to_string(qWidth));
    if (std::string p = cacheSlotProblem(op.cache(), op.slot()); !p.empty())
      return fail(where, p);
    const fa::KvCache *c = root_.caches()->Get(op.cache());
    if (c->kv_heads() != op.kv_heads() || c->head_dim() != op.head_dim())
      return fail(where, "attention has " + std::to_string(op.kv_heads()) +
                             " kv_heads of " + std::to_string(op.head_dim()) +
                             " but cache " + quoted(c->name()) + " has " +
                             std::to_string(c->kv_heads()) + " of " +
                             std::to_string(c->head_dim()));
    FM_RETURN_IF_ERROR(checkKvScales(op, *c, where));
    FM_RETURN_IF_ERROR(buffer("q", *op.q(), rows));
    FM_RETURN_IF_ERROR(buffer("out", *op.out(), rows));
    if (mayOverlap(*op.q(), rows, *op.out(), rows))
      return fail(where, "out buffer " + describe(*op.out()) +
                             " overlaps q buffer " + describe(*op.q()));
    return Status::ok();
  }

  case fa::Op::Dispatch: {
    const fa::Dispatch &op = *command.op_as_Dispatch();
    if (!hasExecutable_)
      return fail(where, "dispatch needs an executable but the artifact has none");
    if (op.function() >= numFunctions_)
      return fail(where, "function index " + std::to_string(op.function()) +
                             " out of range (" + std::to_string(numFunctions_) +
                             " functions)");
    for (flatbuffers::uoffset_t j = 0; j < op.args()->size(); ++j) {
      const fa::Arg *arg = op.args()->Get(j);
      std::string what = "arg " + std::to_string(j);
      switch (arg->kind()) {
      case fa::ArgKind::Buffer:
        if (!arg->buffer())
          return fail(where, what + " is a buffer without a buffer ref");
        FM_RETURN_IF_ERROR(buffer(what.c_str(), *arg->buffer(), rows));
        break;
      case fa::ArgKind::Weight:
        if (std::string p = weightIndexProblem(arg->index()); !p.empty())
          return fail(where, what + ": " + p);
        break;
      case fa::ArgKind::CacheK:
      case fa::ArgKind::CacheV:
        if (std::string p = cacheSlotProblem(arg->index(), arg->slot());
            !p.empty())
          return fail(where, what + ": " + p);
        break;
      default:
        return fail(where, what + " has unknown kind " +
                               std::to_string(static_cast<unsigned>(arg->kind())));
      }
    }
    return Status::ok();
  }

  case fa::Op::CopyLastRow: {
    const fa::CopyLastRow &op = *command.op_as_CopyLastRow();
    if (op.src()->width() != op.dst()->width())
      return fail(where, "src width " + std::to_string(op.src()->width()) +
                             " differs from dst width " +
                             std::to_string(op.dst()->width()));
    FM_RETURN_IF_ERROR(buffer("src", *op.src(), rows));
    return buffer("dst", *op.dst(), 1);
  }

  case fa::Op::Moe:
    return checkMoe(*command.op_as_Moe(), rows, where);

  case fa::Op::AllReduce:
    return buffer("buffer", *command.op_as_AllReduce()->buffer(), rows);

  case fa::Op::NONE:
    return fail(where, "command has no op");
  }
  return fail(where, "unknown op kind " +
                         std::to_string(static_cast<unsigned>(command.op_type())) +
                         " (newer than this runtime?)");
}

// An i8 cache holds round(x / s): the attention over it names the 0-d f32
// scales s of K and V; an f32 cache has none.
Status Checker::checkKvScales(const fa::Attention &op, const fa::KvCache &cache,
                              const std::string &where) {
  const std::pair<const char *, int32_t> scales[2] = {{"k_scale", op.k_scale()},
                                                      {"v_scale", op.v_scale()}};
  if (cache.dtype() != fa::DType::I8) {
    for (auto [what, index] : scales)
      if (index != -1)
        return fail(where, std::string(what) + " " + std::to_string(index) +
                               " is set but cache " + quoted(cache.name()) +
                               " is " + dtypeName(cache.dtype()) +
                               " (scales belong to i8 caches; -1 for none)");
    return Status::ok();
  }
  for (auto [what, index] : scales) {
    if (index < 0)
      return fail(where, "attention over i8 cache " + quoted(cache.name()) +
                             " needs k_scale and v_scale (" + what + " is " +
                             std::to_string(index) + ")");
    if (std::string p = weightIndexProblem(static_cast<uint32_t>(index));
        !p.empty())
      return fail(where, std::string(what) + ": " + p);
    const fa::Weight *w = root_.weights()->Get(static_cast<uint32_t>(index));
    if (w->dtype() != fa::DType::F32 || w->shape()->size() != 0)
      return fail(where, std::string(what) + " " +
                             weightName(static_cast<uint32_t>(index)) + " is " +
                             dtypeName(w->dtype()) + " " +
                             shapeString(w->shape()) +
                             ", expected a 0-d f32 scale");
  }
  return Status::ok();
}

Status Checker::checkMoe(const fa::Moe &op, u64 rows,
                         const std::string &where) {
  const u64 K = op.x()->width(), E = op.gate()->size();
  if (E == 0)
    return fail(where, "moe has no experts");
  if (op.up()->size() != E || op.down()->size() != E)
    return fail(where, "moe has " + std::to_string(E) + " gate, " +
                           std::to_string(op.up()->size()) + " up and " +
                           std::to_string(op.down()->size()) +
                           " down weights: every expert needs one of each");
  if (op.top_k() == 0 || op.top_k() > E)
    return fail(where, "top_k " + std::to_string(op.top_k()) +
                           " is not in 1.." + std::to_string(E) + " (" +
                           std::to_string(E) + " experts)");
  if (K == 0)
    return fail(where, "x width is 0");
  if (op.y()->width() != K)
    return fail(where, "y width " + std::to_string(op.y()->width()) +
                           " is not x width " + std::to_string(K));

  // Without quantized weights the Moe kernel runs, which reads every weight
  // in the router's float dtype. With any, the runtime's own Moe
  // (QuantMoe.cpp) runs, which takes each weight in its own dtype.
  const bool anyQuantized = moeHasQuantizedWeights(root_, op);

  // Every weight: in range, of a dtype some path reads (without quantized
  // weights: the router's), of shape [rows, cols].
  fa::DType dtype = fa::DType::F32;
  auto weight = [&](const std::string &role, int64_t index, u64 rowsWanted,
                    u64 colsWanted, const std::string &meaning) -> Status {
    if (std::string p = weightIndexProblem(static_cast<uint32_t>(index));
        !p.empty())
      return fail(where, role + ": " + p);
    const fa::Weight *w = root_.weights()->Get(static_cast<uint32_t>(index));
    const std::string what =
        role + " " + weightName(static_cast<uint32_t>(index));
    if (w->dtype() != fa::DType::F32 && w->dtype() != fa::DType::F16 &&
        !isQuantized(w->dtype()))
      return fail(where, what + " is " + dtypeName(w->dtype()) +
                             " (moe reads f32, f16, q2, q4 or q8 weights)");
    if (!anyQuantized && w->dtype() != dtype)
      return fail(where, what + " is " + dtypeName(w->dtype()) +
                             " but the router is " + dtypeName(dtype));
    const auto *shape = w->shape();
    if (shape->size() != 2 || u64(shape->Get(0)) != rowsWanted ||
        u64(shape->Get(1)) != colsWanted)
      return fail(where, what + " has shape " + shapeString(shape) +
                             ", expected [" + std::to_string(rowsWanted) +
                             ", " + std::to_string(colsWanted) + "] (" +
                             meaning + ")");
    return Status::ok();
  };
  if (std::string p = weightIndexProblem(op.router()); !p.empty())
    return fail(where, "router: " + p);
  dtype = root_.weights()->Get(op.router())->dtype();
  FM_RETURN_IF_ERROR(weight("router", op.router(), E, K, "experts, x width"));

  const fa::Weight *gate0 = nullptr;
  if (std::string p = weightIndexProblem(op.gate()->Get(0)); !p.empty())
    return fail(where, "expert 0 gate: " + p);
  gate0 = root_.weights()->Get(op.gate()->Get(0));
  if (gate0->shape()->size() != 2 || gate0->shape()->Get(0) <= 0)
    return fail(where, "expert 0 gate " + weightName(op.gate()->Get(0)) +
                           " has shape " + shapeString(gate0->shape()) +
                           ", expected [intermediate, " + std::to_string(K) +
                           "] with intermediate > 0");
  const u64 I = gate0->shape()->Get(0);
  for (u64 e = 0; e < E; ++e) {
    const std::string expert = "expert " + std::to_string(e);
    const auto i = static_cast<flatbuffers::uoffset_t>(e);
    FM_RETURN_IF_ERROR(weight(expert + " gate", op.gate()->Get(i), I, K,
                              "intermediate, x width"));
    FM_RETURN_IF_ERROR(weight(expert + " up", op.up()->Get(i), I, K,
                              "intermediate, x width"));
    FM_RETURN_IF_ERROR(weight(expert + " down", op.down()->Get(i), K, I,
                              "x width, intermediate"));
  }

  const int32_t shared[4] = {op.shared_gate(), op.shared_up(),
                             op.shared_down(), op.shared_expert_gate()};
  const char *sharedNames[4] = {"shared_gate", "shared_up", "shared_down",
                                "shared_expert_gate"};
  int present = 0;
  for (int i = 0; i < 4; ++i) {
    if (shared[i] < -1)
      return fail(where, std::string(sharedNames[i]) + " " +
                             std::to_string(shared[i]) +
                             " is invalid (-1 or a weight index)");
    present += shared[i] >= 0;
  }
  u64 sharedI = 0;
  if (present != 0 && present != 4) {
    std::string given;
    for (int i = 0; i < 4; ++i)
      if (shared[i] >= 0)
        given += std::string(given.empty() ? "" : ", ") + sharedNames[i];
    return fail(where, "a shared expert needs all of shared_gate, shared_up, "
                       "shared_down and shared_expert_gate (given: " +
                           given + ")");
  }
  if (present == 4) {
    if (std::string p = weightIndexProblem(shared[0]); !p.empty())
      return fail(where, "shared gate: " + p);
    const fa::Weight *sg = root_.weights()->Get(shared[0]);
    if (sg->shape()->size() != 2 || sg->shape()->Get(0) <= 0)
      return fail(where, "shared gate " + weightName(shared[0]) +
                             " has shape " + shapeString(sg->shape()) +
                             ", expected [intermediate, " + std::to_string(K) +
                             "] with intermediate > 0");
    sharedI = sg->shape()->Get(0);
    FM_RETURN_IF_ERROR(weight("shared gate", shared[0], sharedI, K,
                              "shared intermediate, x width"));
    FM_RETURN_IF_ERROR(weight("shared up", shared[1], sharedI, K,
                              "shared intermediate, x width"));
    FM_RETURN_IF_ERROR(weight("shared down", shared[2], K, sharedI,
                              "x width, shared intermediate"));
    FM_RETURN_IF_ERROR(weight("shared expert gate", shared[3], 1, K,
                              "1, x width"));
  }

  if (std::string p = bufferProblem("x", *op.x(), rows); !p.empty())
    return fail(where, p);
  if (std::string p = bufferProblem("y", *op.y(), rows); !p.empty())
    return fail(where, p);
  if (mayOverlap(*op.x(), rows, *op.y(), rows))
    return fail(where, "y buffer " + describe(*op.y()) +
                           " overlaps x buffer " + describe(*op.x()));
  kernels::MoeShape shape;
  shape.rows = static_cast<int64_t>(rows);
  shape.hidden = static_cast<int64_t>(K);
  shape.experts = static_cast<int64_t>(E);
  shape.intermediate = static_cast<int64_t>(I);
  shape.topK = op.top_k();
  shape.sharedIntermediate = static_cast<int64_t>(sharedI);
  const u64 scratch = anyQuantized ? quantMoeScratchFloats(shape)
                                   : kernels::moeScratchFloats(shape);
  if (scratch > kMaxFloats)
    return fail(where, "moe needs " + std::to_string(scratch) +
                           " floats of scratch, more than this runtime "
                           "allocates");
  return Status::ok();
}

Status Checker::checkExecutable() {
  const fa::Executable &exe = *root_.executable();
  if (exe.image()->size() == 0)
    return fail("executable", "the image is empty");
  for (flatbuffers::uoffset_t i = 0; i < exe.functions()->size(); ++i)
    if (exe.functions()->Get(i)->size() == 0)
      return fail("executable", "function " + std::to_string(i) +
                                    " has an empty name");
  return Status::ok();
}

} // namespace

Expected<std::unique_ptr<Artifact>> Artifact::open(const std::string &path,
                                                   const Options &options) {
#if FM_HAVE_MMAP
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::error(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(path + ": not a regular file");
  }
  std::unique_ptr<Artifact> a(new Artifact());
  a->name_ = path;
  a->size_ = static_cast<u64>(st.st_size);
  if (a->size_ > 0) {
    void *p = mmap(nullptr, a->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return Status::error(path + ": cannot map: " + std::strerror(err));
    }
    a->base_ = static_cast<const uint8_t *>(p);
    a->mapped_ = true;
  }
  ::close(fd); // The mapping keeps the file.
  return finish(std::move(a), options);
#else
  (void)options;
  return Status::error(path + ": loading files needs mmap (not available)");
#endif
}

Expected<std::unique_ptr<Artifact>>
Artifact::fromBuffer(const uint8_t *data, size_t size, const std::string &name,
                     const Options &options) {
  std::unique_ptr<Artifact> a(new Artifact());
  a->name_ = name;
  a->size_ = size;
  if (size > 0) {
    // FlatBuffers reads scalars in place and weights are used in place:
    // both need the alignment that a mapping would give.
    size_t rounded = (size + kDataAlignment - 1) & ~size_t(kDataAlignment - 1);
    void *copy = std::aligned_alloc(kDataAlignment, rounded);
    if (!copy)
      return Status::error(name + ": out of memory copying " +
                           std::to_string(size) + " bytes");
    std::memcpy(copy, data, size);
    a->base_ = static_cast<const uint8_t *>(copy);
  }
  return finish(std::move(a), options);
}

Expected<std::unique_ptr<Artifact>>
Artifact::finish(std::unique_ptr<Artifact> artifact, const Options &options) {
  FM_RETURN_IF_ERROR(artifact->verify(options));
  return artifact;
}

Artifact::~Artifact() {
#if FM_HAVE_MMAP
  if (mapped_) {
    munmap(const_cast<uint8_t *>(base_), size_);
    return;
  }
#endif
  std::free(const_cast<uint8_t *>(base_));
}

const uint8_t *Artifact::weightData(uint32_t index) const {
  return data_ + root_->weights()->Get(index)->offset();
}

Status Artifact::verify(const Options &options) {
  const std::string &n = name_;
  // [u32 N][u32 root offset][4-byte identifier] at least.
  if (size_ < 12)
    return Status::error(n + ": not an fmc artifact (the file has only " +
                         std::to_string(size_) + " bytes)");
  if (!fa::SizePrefixedArtifactBufferHasIdentifier(base_))
    return Status::error(n + ": not an fmc artifact (bad identifier)");
  u64 fbSize = flatbuffers::ReadScalar<uint32_t>(base_);
  u64 fbEnd = 4 + fbSize;
  if (fbEnd > size_)
    return Status::error(n + ": truncated: the FlatBuffer ends at " +
                         std::to_string(fbEnd) + " but the file has " +
                         std::to_string(size_) + " bytes");
  if (fbEnd >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return Status::error(n + ": corrupt: a FlatBuffer of " +
                         std::to_string(fbSize) + " bytes is over the 2 GiB limit");
  {
    // The defaults cap tables at a million; a big model's command list is
    // far below that.
    flatbuffers::Verifier verifier(base_, fbEnd);
    if (!fa::VerifySizePrefixedArtifactBuffer(verifier))
      return Status::error(n + ": corrupt: the FlatBuffer fails verification");
  }
  root_ = fa::GetSizePrefixedArtifact(base_);
  if (root_->schema_version() != kSchemaVersion)
    return Status::error(n + ": schema version " +
                         std::to_string(root_->schema_version()) +
                         " is not supported (this runtime reads version " +
                         std::to_string(kSchemaVersion) + ")");

  u64 dataStart = align64(fbEnd);
  dataSize_ = root_->data_size();
  if (dataSize_ > 0 &&
      (dataStart > size_ || dataSize_ > size_ - dataStart))
    return Status::error(n + ": truncated: data section ends at " +
                         std::to_string(satAdd(dataStart, dataSize_)) +
                         " but the file has " + std::to_string(size_) +
                         " bytes");
  data_ = base_ + (dataStart <= size_ ? dataStart : size_);

  Checker checker(name_, *root_, dataSize_);
  FM_RETURN_IF_ERROR(checker.run(&hasDispatch_));

  if (options.verifyHash) {
    uint64_t hash = fnv1a64(data_, dataSize_);
    if (hash != root_->content_hash()) {
      char buf[160];
      std::snprintf(buf, sizeof(buf),
                    "content hash mismatch: data section hashes to %016llx, "
                    "the artifact says %016llx",
                    static_cast<unsigned long long>(hash),
                    static_cast<unsigned long long>(root_->content_hash()));
      return Status::error(n + ": " + buf);
    }
  }
  return Status::ok();
}

} // namespace fm::rt
