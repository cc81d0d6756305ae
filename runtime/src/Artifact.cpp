// The .fmb loader. Any bytes either load into an Artifact the executor can
// run without further checks or give an error that names the file and the
// element at fault; nothing here may crash on a bad file.
//
// What verify() establishes, in order:
//   - the file holds a size-prefixed FlatBuffer with identifier "FMB1" that
//     passes the FlatBuffers verifier, with schema_version 1;
//   - the data section [align64(4 + N), + data_size) lies in the file, and
//     every weight is 64-aligned in it, inside it, and sized as its shape;
//   - every cache is f32 with non-zero sizes that fit in memory;
//   - every program has a unique phase, max_rows >= 1, a logits buffer of
//     vocab_size columns, and every command is well formed: indices in range,
//     buffers inside the arena (at max_rows rows, or 1 for last_row_only),
//     shapes consistent with the kernels' contracts, no in/out overlap;
//   - an executable exists, with functions for every Dispatch, when any
//     program dispatches.
#include "Artifact.h"

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
  }
  return "dtype " + std::to_string(static_cast<unsigned>(dtype));
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
  Status checkCaches();
  Status checkProgram(const fa::Program &program, const std::string &where);
  Status checkCommand(const fa::Program &program, const fa::Command &command,
                      const std::string &where);
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
    u64 elemSize = dtypeSize(w->dtype());
    if (elemSize == 0)
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

Status Checker::checkCaches() {
  const auto *caches = root_.caches();
  for (flatbuffers::uoffset_t i = 0; i < caches->size(); ++i) {
    const fa::KvCache *c = caches->Get(i);
    std::string where = "cache " + std::to_string(i) + " (" + quoted(c->name()) + ")";
    if (c->dtype() != fa::DType::F32)
      return fail(where, "dtype " + dtypeName(c->dtype()) +
                             " is not supported (this runtime keeps f32 caches)");
    if (c->kv_heads() == 0 || c->head_dim() == 0 || c->capacity() == 0)
      return fail(where, "kv_heads, head_dim and capacity must be non-zero (" +
                             std::to_string(c->kv_heads()) + ", " +
                             std::to_string(c->head_dim()) + ", " +
                             std::to_string(c->capacity()) + ")");
    u64 floats = satMul(satMul(satMul(satMul(c->slots(), 2), c->capacity()),
                               c->kv_heads()),
                        c->head_dim());
    if (floats > kMaxFloats)
      return fail(where, "needs " + std::to_string(floats) +
                             " floats, more than this runtime allocates");
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
    std::string at = where + " command " + std::to_string(i);
    if (command->layer() && command->layer()->size() > 0)
      at += " (" + command->layer()->str() + ")";
    FM_RETURN_IF_ERROR(checkCommand(program, *command, at));
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
    if (w->dtype() != fa::DType::F32 && w->dtype() != fa::DType::F16)
      return fail(where, table + " is " + dtypeName(w->dtype()) +
                             " (embed reads f32 or f16)");
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
    u64 totalRows = 0;
    fa::DType dtype = fa::DType::F32;
    for (flatbuffers::uoffset_t j = 0; j < op.weights()->size(); ++j) {
      uint32_t index = op.weights()->Get(j);
      if (std::string p = weightIndexProblem(index); !p.empty())
        return fail(where, p);
      const fa::Weight *w = root_.weights()->Get(index);
      if (w->dtype() != fa::DType::F32 && w->dtype() != fa::DType::F16)
        return fail(where, weightName(index) + " is " + dtypeName(w->dtype()) +
                               " (matmul reads f32 or f16 weights)");
      if (j == 0)
        dtype = w->dtype();
      else if (w->dtype() != dtype)
        return fail(where, weightName(index) + " is " + dtypeName(w->dtype()) +
                               " but the first weight is " + dtypeName(dtype));
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

  case fa::Op::NONE:
    return fail(where, "command has no op");
  }
  return fail(where, "unknown op kind " +
                         std::to_string(static_cast<unsigned>(command.op_type())) +
                         " (newer than this runtime?)");
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
