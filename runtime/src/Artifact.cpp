// The .fmb loader (fm/artifact.h). Any bytes either load into an artifact
// the executor can run without further checks or give an error that names
// the file and the element at fault; nothing here may crash on a bad file.
//
// What verify() establishes, in order:
//   - the file holds a size-prefixed FlatBuffer with identifier "FMB1" whose
//     schema_version (read first, through ArtifactHeader) is this runtime's,
//     and which then passes the FlatBuffers verifier;
//   - the program digest (BLAKE2b-256 of everything before the data
//     section) matches, unless a fuzzer turned the check off; with
//     checkWeightsDigest, the weights digest too;
//   - the data section [align64(4 + N), + data_size) lies in the file, and
//     every weight (and each of its per-target variants) is 64-aligned in
//     it, inside it, and sized as its shape;
//   - a Q2/Q4/Q8 weight is 2-D [rows, inputs] with group 32, 64 or 128
//     dividing its inputs, a known grid, and rows * packedRowBytes bytes;
//   - every cache is f32 or i8 with non-zero sizes that fit in memory;
//   - executables: one per target at most, each with a format and an image,
//     all exporting the same ordered function list (same names), with
//     well-formed launch metadata;
//   - every program has a unique phase, max_rows >= 1, a logits buffer of
//     vocab_size columns, and every command is well formed, as its kind
//     (runtime/src/commands/) checks it: indices in range, buffers inside
//     the arena (at max_rows rows, or 1 for last_row_only), shapes
//     consistent with the kernels' contracts, no in/out overlap;
//   - ranks >= 1; every command's block, track and rank are -1 or in range
//     (num_track_blocks, num_tracks, ranks), block and track are set
//     together, and AllReduce commands run between blocks on every rank;
//   - within a track section (consecutive commands of one block) no command
//     of one track writes a buffer that another track uses, and no two
//     tracks use one cache slot, unless the two tracks run on different
//     ranks (so never in one process);
//   - an executable exists when any program dispatches;
//   - an embedded tokenizer has a tokenizer.json and stop ids below
//     vocab_size (its contents are parsed when asked for:
//     ArtifactTokenizer.cpp);
//   - an "encode_image" program has an ImageInput (a non-empty image that
//     fits its buffer, a mean and std per channel, std non-zero) and only
//     commands that need no tokens, positions or caches, each with its fixed
//     rows; other programs have no ImageInput and no fixed rows; an
//     image_token_index >= 0 lies in the vocabulary, and the encode_image
//     program's output is as wide as the decoder's hidden size.
#include "fm/artifact.h"

#include "FlatFile.h"
#include "commands/Command.h"
#include "fm/fmb_header_generated.h"
#include "kernels/qformat.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
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

namespace fm {

namespace fa = fm::artifact;
using rt::u64;

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

namespace {

// The phase of an image encoder's program.
constexpr const char *kImagePhase = "encode_image";

// Caches and arenas are allocated from these counts; anything larger is a
// corrupt file, not a model (and would overflow size_t arithmetic).
constexpr u64 kMaxBytes = u64(1) << 46;

constexpr u64 kSaturated = ~u64(0);
u64 satAdd(u64 a, u64 b) { return a > kSaturated - b ? kSaturated : a + b; }
u64 satMul(u64 a, u64 b) {
  return a != 0 && b > kSaturated / a ? kSaturated : a * b;
}

std::string quoted(const flatbuffers::String *s) {
  return s ? "'" + s->str() + "'" : std::string("''");
}

// "command 12 (model.layers.3.self_attn)", or without the layer name when
// there is none.
std::string commandName(const fa::Command &command, flatbuffers::uoffset_t i) {
  std::string s = "command " + std::to_string(i);
  if (command.layer() && command.layer()->size() > 0)
    s += " (" + command.layer()->str() + ")";
  return s;
}

// One past the last byte a `rows`-row buffer touches.
u64 bufferEnd(const fa::BufferRef &b, u64 rows) {
  return satAdd(satAdd(b.offset(), satMul(rows - 1, b.stride())),
                satMul(b.width(), 4));
}

// Checks the parts of an artifact that the executor relies on. Each check
// returns a Status whose message names the file and the element.
class Checker {
public:
  Checker(const std::string &name, const fa::Artifact &root, u64 dataSize)
      : name_(name), root_(root), dataSize_(dataSize) {}

  Status run(bool *hasDispatch);

  Status fail(const std::string &where, const std::string &what) const {
    return Status::error(name_ + ": " + where + ": " + what);
  }

  // Empty when `b` is usable for `rows` rows, else why not.
  std::string bufferProblem(const char *what, const fa::BufferRef &b,
                            u64 rows) const {
    if (b.offset() % 4 != 0 || b.stride() % 4 != 0)
      return std::string(what) + " buffer " + rt::describe(b) +
             ": offset and stride must be multiples of 4 bytes";
    if (rows > 1 && u64(b.width()) * 4 > b.stride())
      return std::string(what) + " buffer " + rt::describe(b) +
             ": width exceeds stride";
    u64 end = bufferEnd(b, rows);
    if (end > arenaBytes_)
      return std::string(what) + " buffer " + rt::describe(b) + " with " +
             std::to_string(rows) + (rows == 1 ? " row" : " rows") +
             " ends at byte " + std::to_string(end) + ", past the arena of " +
             std::to_string(arenaBytes_) + " bytes";
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

  u64 numFunctions() const { return numFunctions_; }

private:
  Status checkWeights();
  Status checkExtent(const std::string &where, u64 offset, u64 size) const;
  Status checkQuantWeight(const fa::Weight &w, const std::string &where);
  Status checkCaches();
  Status checkExecutables();
  Status checkProgram(const fa::Program &program, const std::string &where);
  Status checkImageInput(const fa::Program &program, const std::string &where);
  Status checkImageCommand(const fa::Command &command, const std::string &where);
  Status checkPlacement(const fa::Command &command, const std::string &where);
  Status checkSection(const fa::Program &program, flatbuffers::uoffset_t begin,
                      flatbuffers::uoffset_t end, const std::string &where);

  const std::string &name_;
  const fa::Artifact &root_;
  u64 dataSize_;
  u64 numWeights_ = 0, numCaches_ = 0, numFunctions_ = 0;
  u64 arenaBytes_ = 0; // Of the program being checked.
};

// The loader's answers to a command kind's verifier.
class CommandChecker final : public rt::VerifyContext {
public:
  CommandChecker(const Checker &checker, const fa::Artifact &root, u64 rows,
                 const std::string &where)
      : VerifyContext(root, rows), checker_(checker), where_(where) {}

  Status fail(const std::string &what) const override {
    return checker_.fail(where_, what);
  }
  std::string bufferProblem(const char *what, const fa::BufferRef &b,
                            u64 rows) const override {
    return checker_.bufferProblem(what, b, rows);
  }
  std::string weightIndexProblem(uint32_t index) const override {
    return checker_.weightIndexProblem(index);
  }
  std::string cacheSlotProblem(uint32_t cache, uint32_t slot) const override {
    return checker_.cacheSlotProblem(cache, slot);
  }
  std::string weightName(uint32_t index) const override {
    return checker_.weightName(index);
  }
  u64 numFunctions() const override { return checker_.numFunctions(); }

private:
  const Checker &checker_;
  const std::string &where_;
};

Status Checker::run(bool *hasDispatch) {
  numWeights_ = root_.weights()->size();
  numCaches_ = root_.caches()->size();
  FM_RETURN_IF_ERROR(checkWeights());
  FM_RETURN_IF_ERROR(checkCaches());
  FM_RETURN_IF_ERROR(checkExecutables());

  if (root_.ranks() == 0)
    return Status::error(name_ + ": ranks is 0 (a model runs on at least one)");

  const auto *programs = root_.programs();
  const fa::Program *image = nullptr;
  bool decoder = false;
  for (const fa::Program *program : *programs) {
    if (program->phase()->str() == kImagePhase)
      image = program;
    else
      decoder = true;
  }
  if (decoder && root_.vocab_size() == 0)
    return Status::error(name_ + ": vocab_size is 0");
  if (root_.image_token_index() < -1)
    return Status::error(name_ + ": image_token_index " +
                         std::to_string(root_.image_token_index()) +
                         " is invalid (a token id, or -1 for none)");
  if (root_.image_token_index() >= 0) {
    const std::string token =
        "image_token_index " + std::to_string(root_.image_token_index());
    if (!image || !decoder)
      return Status::error(name_ + ": " + token +
                           " needs an encode_image program and a decoder");
    if (u64(root_.image_token_index()) >= root_.vocab_size())
      return Status::error(name_ + ": " + token + " is outside the vocabulary (" +
                           std::to_string(root_.vocab_size()) + " tokens)");
    if (image->logits()->width() != root_.hidden_size())
      return Status::error(name_ + ": the image tokens are " +
                           std::to_string(image->logits()->width()) +
                           " wide but the decoder's hidden size is " +
                           std::to_string(root_.hidden_size()));
  }
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
  return Status::ok();
}

Status Checker::checkExtent(const std::string &where, u64 offset,
                            u64 size) const {
  if (offset % format::kDataAlignment != 0)
    return fail(where, "offset " + std::to_string(offset) +
                           " is not a multiple of 64");
  if (offset > dataSize_ || size > dataSize_ - offset)
    return fail(where, "bytes [" + std::to_string(offset) + ", " +
                           std::to_string(satAdd(offset, size)) +
                           ") lie outside the data section (" +
                           std::to_string(dataSize_) + " bytes)");
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
        return fail(where, "shape " + rt::shapeString(w->shape()) +
                               " has a negative dimension");
      elements = satMul(elements, static_cast<u64>(dim));
      if (elements > (u64(1) << 62))
        return fail(where,
                    "shape " + rt::shapeString(w->shape()) + " is too large");
    }
    FM_RETURN_IF_ERROR(checkExtent(where, w->offset(), w->size()));
    if (w->variants()) {
      std::set<std::string> targets;
      for (const fa::WeightVariant *v : *w->variants()) {
        const std::string at = where + " variant for " + quoted(v->target());
        if (v->target()->size() == 0 || v->layout()->size() == 0)
          return fail(at, "a variant names its target and its layout");
        if (!targets.insert(v->target()->str()).second)
          return fail(at, "a second variant for this target");
        FM_RETURN_IF_ERROR(checkExtent(at, v->offset(), v->size()));
      }
    }
    if (quantized) {
      FM_RETURN_IF_ERROR(checkQuantWeight(*w, where));
      continue;
    }
    u64 expected = elements * elemSize; // < 2^62 * 4
    if (expected != w->size())
      return fail(where, "size " + std::to_string(w->size()) +
                             " bytes does not match shape " +
                             rt::shapeString(w->shape()) + " of " +
                             dtypeName(w->dtype()) + " (" +
                             std::to_string(expected) + " bytes)");
  }
  return Status::ok();
}

// A Q2/Q4/Q8 weight: an nn.Linear [rows][inputs] of packed rows
// (kernels/qformat.h), whole groups per row.
Status Checker::checkQuantWeight(const fa::Weight &w, const std::string &where) {
  const auto *shape = w.shape();
  const std::string type = dtypeName(w.dtype());
  if (shape->size() != 2)
    return fail(where, type + " weight has shape " + rt::shapeString(shape) +
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
  const kernels::QuantFormat f = rt::quantFormatOf(w);
  const u64 groups = inputs / w.group();
  const u64 rowBytes =
      satAdd(inputs / 8 * f.bits,
             satMul(groups, f.grid == kernels::QuantGrid::Affine ? 4 : 2));
  const u64 expected = satMul(rows, rowBytes);
  if (expected != w.size())
    return fail(where, "size " + std::to_string(w.size()) +
                           " bytes does not match shape " +
                           rt::shapeString(shape) + " of " + type + " (group " +
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
    if (bytes > kMaxBytes)
      return fail(where, "needs " + std::to_string(bytes) +
                             " bytes, more than this runtime allocates");
  }
  return Status::ok();
}

Status Checker::checkExecutables() {
  const auto *exes = root_.executables();
  std::set<std::string> targets;
  const fa::Executable *first = nullptr;
  for (flatbuffers::uoffset_t i = 0; i < exes->size(); ++i) {
    const fa::Executable &exe = *exes->Get(i);
    const std::string where = "executable " + std::to_string(i) + " (target " +
                              quoted(exe.target()) + ")";
    if (exe.target()->size() == 0)
      return fail(where, "the target is empty");
    if (!targets.insert(exe.target()->str()).second)
      return fail(where, "a second executable for this target");
    if (exe.data()->size() == 0)
      return fail(where, "the image is empty");
    const auto *fns = exe.functions();
    for (flatbuffers::uoffset_t f = 0; f < fns->size(); ++f) {
      const fa::Function &fn = *fns->Get(f);
      const std::string at = where + " function " + std::to_string(f);
      if (fn.name()->size() == 0)
        return fail(at, "the name is empty");
      if (fn.workgroup_size() && fn.workgroup_size()->size() != 0 &&
          fn.workgroup_size()->size() != 3)
        return fail(at, "workgroup_size has " +
                            std::to_string(fn.workgroup_size()->size()) +
                            " entries, expected none or [x, y, z]");
      if (fn.push_constants())
        for (const fa::PushConstant *pc : *fn.push_constants())
          if (pc->size() == 0 || pc->size() > 256 || pc->offset() > 256 ||
              pc->offset() + pc->size() > 256)
            return fail(at, "push constant " + quoted(pc->name()) +
                                " lies outside the 256 bytes a device gets");
    }
    if (!first) {
      first = &exe;
      continue;
    }
    // Every executable exports the same ordered function list.
    const auto *names = first->functions();
    if (fns->size() != names->size())
      return fail(where, "exports " + std::to_string(fns->size()) +
                             " functions but the " + first->target()->str() +
                             " executable exports " +
                             std::to_string(names->size()));
    for (flatbuffers::uoffset_t f = 0; f < fns->size(); ++f)
      if (fns->Get(f)->name()->str() != names->Get(f)->name()->str())
        return fail(where, "function " + std::to_string(f) + " is " +
                               quoted(fns->Get(f)->name()) + " but the " +
                               first->target()->str() + " executable's is " +
                               quoted(names->Get(f)->name()));
  }
  numFunctions_ = first ? first->functions()->size() : 0;
  return Status::ok();
}

Status Checker::checkProgram(const fa::Program &program,
                             const std::string &where) {
  if (program.max_rows() == 0)
    return fail(where, "max_rows is 0");
  if (program.arena_bytes() > kMaxBytes)
    return fail(where, "arena of " + std::to_string(program.arena_bytes()) +
                           " bytes is more than this runtime allocates");
  arenaBytes_ = program.arena_bytes();
  u64 logitRows = program.logits_last_row_only() ? 1 : program.max_rows();
  const fa::BufferRef &logits = *program.logits();
  const bool image = program.phase()->str() == kImagePhase;
  if (image) {
    FM_RETURN_IF_ERROR(checkImageInput(program, where));
    if (logits.width() == 0 || program.logits_last_row_only())
      return fail(where, "the image tokens buffer must be non-empty and hold "
                         "every row");
  } else {
    if (program.image())
      return fail(where, "only the encode_image program takes an image");
    if (logits.width() != root_.vocab_size())
      return fail(where, "logits width " + std::to_string(logits.width()) +
                             " is not vocab_size " +
                             std::to_string(root_.vocab_size()));
  }
  if (std::string p = bufferProblem(image ? "image tokens" : "logits", logits,
                                    logitRows);
      !p.empty())
    return fail(where, p);

  const auto *commands = program.commands();
  for (flatbuffers::uoffset_t i = 0; i < commands->size(); ++i) {
    const fa::Command *command = commands->Get(i);
    const std::string at = where + " " + commandName(*command, i);
    FM_RETURN_IF_ERROR(checkPlacement(*command, at));
    const rt::CommandKind *kind = rt::commandKind(command->op_type());
    if (!kind) {
      if (command->op_type() == fa::Op::NONE)
        return fail(at, "command has no op");
      return fail(at, "unknown op kind " +
                          std::to_string(static_cast<unsigned>(command->op_type())) +
                          " (newer than this runtime?)");
    }
    if (image)
      FM_RETURN_IF_ERROR(checkImageCommand(*command, at));
    else if (command->rows() != 0)
      return fail(at, "fixed rows (" + std::to_string(command->rows()) +
                          ") belong to encode_image programs");
    const u64 rows = command->rows()           ? command->rows()
                     : command->last_row_only() ? 1
                                                : program.max_rows();
    FM_RETURN_IF_ERROR(
        kind->verify(CommandChecker(*this, root_, rows, at), *command));
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

// The image and its preprocessing: what the caller writes and how.
Status Checker::checkImageInput(const fa::Program &program,
                                const std::string &where) {
  const fa::ImageInput *in = program.image();
  if (!in)
    return fail(where, "an encode_image program needs its ImageInput");
  if (in->channels() == 0 || in->height() == 0 || in->width() == 0)
    return fail(where, "the image is empty (" + std::to_string(in->channels()) +
                           "x" + std::to_string(in->height()) + "x" +
                           std::to_string(in->width()) + ")");
  const u64 floats = satMul(satMul(in->channels(), in->height()), in->width());
  if (in->buffer()->width() != floats)
    return fail(where, "the image buffer holds " +
                           std::to_string(in->buffer()->width()) +
                           " floats, not channels x height x width = " +
                           std::to_string(floats));
  if (std::string p = bufferProblem("image", *in->buffer(), 1); !p.empty())
    return fail(where, p);
  for (auto [what, values] : {std::pair<const char *, const flatbuffers::Vector<double> *>{
                                  "mean", in->mean()},
                              {"std", in->std()}}) {
    if (!values)
      continue;
    if (values->size() != in->channels())
      return fail(where, std::string("image ") + what + " has " +
                             std::to_string(values->size()) + " values for " +
                             std::to_string(in->channels()) + " channels");
    for (double v : *values)
      if (!std::isfinite(v) || (std::string(what) == "std" && v == 0.0))
        return fail(where, std::string("image ") + what + " holds " +
                               std::to_string(v) +
                               " (finite values; std non-zero)");
  }
  if (in->resample() > fa::Resample::MAX)
    return fail(where, "unknown resample filter " +
                           std::to_string(static_cast<unsigned>(in->resample())));
  return Status::ok();
}

// encode_image runs once per image: every command has its fixed rows or
// knows its own, and none reads tokens, positions or caches.
Status Checker::checkImageCommand(const fa::Command &command,
                                  const std::string &where) {
  switch (command.op_type()) {
  case fa::Op::PatchEmbed:
  case fa::Op::VitAttention:
  case fa::Op::Conv3x3:
  case fa::Op::AvgPool:
    return Status::ok();
  case fa::Op::MatMul:
  case fa::Op::LayerNorm:
    break;
  case fa::Op::Dispatch:
    for (const fa::Arg *a : *command.op_as_Dispatch()->args())
      if (a->kind() == fa::ArgKind::CacheK || a->kind() == fa::ArgKind::CacheV)
        return fail(where, "an encode_image kernel cannot write a KV cache");
    break;
  default:
    return fail(where, std::string("a ") + rt::commandKind(command.op_type())->name +
                           " command cannot run in an encode_image program "
                           "(it needs tokens, positions or caches)");
  }
  if (command.rows() == 0)
    return fail(where, "a command of an encode_image program needs its fixed rows");
  return Status::ok();
}

Status Checker::checkPlacement(const fa::Command &command,
                               const std::string &where) {
  const int32_t block = command.block(), track = command.track(),
                rank = command.rank();
  for (auto [what, value] : {std::pair<const char *, int32_t>{"block", block},
                             {"track", track},
                             {"rank", rank}})
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
  if (rank >= 0 && u64(rank) >= root_.ranks())
    return fail(where, "rank " + std::to_string(rank) +
                           " out of range (the model is partitioned over " +
                           std::to_string(root_.ranks()) +
                           (root_.ranks() == 1 ? " rank)" : " ranks)"));
  if (command.op_type() == fa::Op::AllReduce) {
    if (block >= 0)
      return fail(where, "an AllReduce cannot be inside track block " +
                             std::to_string(block) +
                             ": collectives run between blocks");
    if (rank >= 0)
      return fail(where, "an AllReduce runs on every rank (rank -1), not "
                         "only on rank " +
                             std::to_string(rank));
  }
  return Status::ok();
}

namespace {

// One buffer use of a command in a track section.
struct Access {
  u64 lo = 0, hi = 0; // bytes [lo, hi) that the buffer may touch
  const fa::BufferRef *ref = nullptr;
  u64 rows = 0;
  int32_t track = 0, rank = 0;
  bool write = false;
  flatbuffers::uoffset_t command = 0;
  const char *what = "";
};

// Whether commands of ranks a and b can run in one process.
bool sameProcess(int32_t a, int32_t b) { return a < 0 || b < 0 || a == b; }

} // namespace

// Tracks of a section run concurrently: a buffer that one track writes must
// not be used by another, and a cache slot belongs to one track. Reads may
// be shared (every track reads the block's input).
Status Checker::checkSection(const fa::Program &program,
                             flatbuffers::uoffset_t begin,
                             flatbuffers::uoffset_t end,
                             const std::string &where) {
  const auto *commands = program.commands();
  std::vector<Access> accesses;
  struct SlotUse {
    uint32_t cache, slot;
    int32_t track, rank;
    flatbuffers::uoffset_t command;
  };
  std::vector<SlotUse> slots;
  std::vector<rt::Use> uses;
  for (flatbuffers::uoffset_t i = begin; i < end; ++i) {
    const fa::Command &c = *commands->Get(i);
    const u64 rows = c.last_row_only() ? 1 : program.max_rows();
    uses.clear();
    rt::commandKind(c.op_type())->uses(c, rows, uses);
    for (const rt::Use &u : uses) {
      if (!u.buffer) {
        slots.push_back({u.cache, u.slot, c.track(), c.rank(), i});
        continue;
      }
      if (u.buffer->width() == 0)
        continue;
      Access a;
      a.lo = u.buffer->offset();
      a.hi = bufferEnd(*u.buffer, u.rows);
      a.ref = u.buffer;
      a.rows = u.rows;
      a.track = c.track();
      a.rank = c.rank();
      a.write = u.write;
      a.command = i;
      a.what = u.what;
      accesses.push_back(a);
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
      if (a.track != b.track && sameProcess(a.rank, b.rank))
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
          !sameProcess(a.rank, b->rank) ||
          !rt::mayOverlap(*a.ref, a.rows, *b->ref, b->rows))
        continue;
      const Access &first = a.command < b->command ? a : *b;
      const Access &second = a.command < b->command ? *b : a;
      return Status::error(name_ + ": " + block + ": " + name(second.command) +
                           (second.write ? " writes " : " reads ") +
                           second.what + " buffer " + rt::describe(*second.ref) +
                           ", which overlaps " + first.what + " buffer " +
                           rt::describe(*first.ref) + " of " +
                           name(first.command) + why);
    }
    open.push_back(&a);
  }
  return Status::ok();
}

std::string hex(const format::Digest &d) { return format::hex(d); }

format::Digest toDigest(const fa::Digest *d) {
  format::Digest out{};
  if (d)
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = d->bytes()->Get(static_cast<flatbuffers::uoffset_t>(i));
  return out;
}

} // namespace

#if FM_HAVE_MMAP
int64_t mtimeNs(const struct stat &st) {
#if defined(__APPLE__)
  return int64_t(st.st_mtimespec.tv_sec) * 1000000000 + st.st_mtimespec.tv_nsec;
#else
  return int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
#endif
}

// Reads `size` bytes at `offset` of `fd`; false (errno set, or 0 for a
// short file) when they are not all there.
bool readAt(int fd, uint64_t offset, uint8_t *out, uint64_t size) {
  while (size > 0) {
    ssize_t n = ::pread(fd, out, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = 0;
      return false;
    }
    out += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<uint64_t>(n);
  }
  return true;
}
#endif

Status ArtifactFile::readHead() {
#if FM_HAVE_MMAP
  // The FlatBuffer and its padding (what the program digest covers), or
  // the first bytes when the size prefix is out of range (verify() says
  // so). Read, not mapped: a later change to the file cannot reach it.
  u64 want = std::min<u64>(size_, 12);
  uint8_t prefix[4];
  if (size_ >= 4 && readAt(fd_, 0, prefix, 4)) {
    const u64 fbEnd = 4 + flatbuffers::ReadScalar<uint32_t>(prefix);
    if (fbEnd < FLATBUFFERS_MAX_BUFFER_SIZE)
      want = std::min<u64>(size_, format::alignData(fbEnd));
  }
  void *copy = nullptr;
  if (want > 0 && posix_memalign(&copy, format::kDataAlignment, want) != 0)
    return Status::error(name_ + ": out of memory reading " +
                         std::to_string(want) + " bytes");
  head_ = static_cast<const uint8_t *>(copy);
  headSize_ = want;
  ownsHead_ = true;
  if (want > 0 && !readAt(fd_, 0, static_cast<uint8_t *>(copy), want))
    return Status::error(name_ + ": cannot read its first " +
                         std::to_string(want) + " bytes: " +
                         (errno ? std::strerror(errno)
                                : "the file became shorter"));
  return Status::ok();
#else
  return Status::error(name_ + ": loading files needs mmap (not available)");
#endif
}

Status ArtifactFile::checkUnchanged() const {
#if FM_HAVE_MMAP
  if (fd_ < 0)
    return Status::ok();
  struct stat st;
  if (fstat(fd_, &st) != 0)
    return Status::error(name_ + ": cannot stat: " + std::strerror(errno));
  if (static_cast<u64>(st.st_size) != size_)
    return Status::error(name_ + " changed after it was loaded: it had " +
                         std::to_string(size_) + " bytes, now " +
                         std::to_string(st.st_size) + " (load it again)");
  if (mtimeNs(st) != mtimeNs_)
    return Status::error(name_ + " was modified after it was loaded (load it "
                                 "again)");
#endif
  return Status::ok();
}

Expected<std::unique_ptr<ArtifactFile>>
ArtifactFile::open(const std::string &path, const Options &options) {
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
  std::unique_ptr<ArtifactFile> a(new ArtifactFile());
  a->name_ = path;
  a->size_ = static_cast<u64>(st.st_size);
  a->fd_ = fd; // Kept for checkUnchanged(); closed by the destructor.
  a->mtimeNs_ = mtimeNs(st);
  if (a->size_ > 0) {
    void *p = mmap(nullptr, a->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
      return Status::error(path + ": cannot map: " + std::strerror(errno));
    a->base_ = static_cast<const uint8_t *>(p);
    a->mapped_ = true;
  }
  FM_RETURN_IF_ERROR(a->readHead());
  return finish(std::move(a), options);
#else
  (void)options;
  return Status::error(path + ": loading files needs mmap (not available)");
#endif
}

Expected<std::unique_ptr<ArtifactFile>>
ArtifactFile::fromBuffer(const uint8_t *data, size_t size,
                         const std::string &name, const Options &options) {
  std::unique_ptr<ArtifactFile> a(new ArtifactFile());
  a->name_ = name;
  a->size_ = size;
  if (size > 0) {
    // FlatBuffers reads scalars in place and weights are used in place:
    // both need the alignment that a mapping would give.
    // Exactly `size` bytes, so that a sanitizer sees a read past the end.
    void *copy = nullptr;
    if (posix_memalign(&copy, format::kDataAlignment, size) != 0)
      return Status::error(name + ": out of memory copying " +
                           std::to_string(size) + " bytes");
    std::memcpy(copy, data, size);
    a->base_ = static_cast<const uint8_t *>(copy);
  }
  a->head_ = a->base_;
  a->headSize_ = size;
  return finish(std::move(a), options);
}

Expected<std::unique_ptr<ArtifactFile>>
ArtifactFile::finish(std::unique_ptr<ArtifactFile> file,
                     const Options &options) {
  FM_RETURN_IF_ERROR(file->verify(options));
  return file;
}

ArtifactFile::~ArtifactFile() {
  if (ownsHead_)
    std::free(const_cast<uint8_t *>(head_));
#if FM_HAVE_MMAP
  if (fd_ >= 0)
    ::close(fd_);
  if (mapped_) {
    munmap(const_cast<uint8_t *>(base_), size_);
    return;
  }
#endif
  std::free(const_cast<uint8_t *>(base_));
}

const uint8_t *ArtifactFile::weightData(uint32_t index) const {
  return data_ + root_->weights()->Get(index)->offset();
}

const fa::Executable *ArtifactFile::executable(const std::string &target) const {
  for (const fa::Executable *e : *root_->executables())
    if (e->target()->str() == target)
      return e;
  return nullptr;
}

std::vector<std::string> ArtifactFile::targets() const {
  std::vector<std::string> out;
  for (const fa::Executable *e : *root_->executables())
    out.push_back(e->target()->str());
  return out;
}

format::Digest ArtifactFile::programDigest() const {
  return toDigest(root_->program_digest());
}

format::Digest ArtifactFile::weightsDigest() const {
  return toDigest(root_->weights_digest());
}

format::SignedDigests ArtifactFile::signedDigests() const {
  format::SignedDigests d;
  d.program = programDigest();
  d.weights = weightsDigest();
  return d;
}

Expected<std::vector<format::TrailerRecord>> ArtifactFile::trailer() const {
  const u64 dataEnd =
      format::dataStart(flatbuffers::ReadScalar<uint32_t>(head_)) + dataSize_;
  if (dataEnd >= size_)
    return std::vector<format::TrailerRecord>{};
  return format::readTrailer(base_ + dataEnd, size_ - dataEnd, dataEnd, name_);
}

Status ArtifactFile::checkSignature(const Options &options) {
  const std::string statement = format::signedStatement(signedDigests());
  auto records = trailer();
  if (!records)
    return records.status();
  std::vector<std::string> signers;
  for (const format::TrailerRecord &r : *records) {
    if (r.kind != format::kTrailerSignature)
      continue; // A record of a later kind: not ours to read.
    const std::string where =
        name_ + ": the signature at byte " + std::to_string(r.offset);
    auto signature = minisign::parseSignature(r.payload, where);
    if (!signature)
      return signature.status();
    for (const minisign::PublicKey &key : options.trustedKeys) {
      if (key.id != signature->id)
        continue;
      FM_RETURN_IF_ERROR(minisign::verify(
          *signature, key, reinterpret_cast<const uint8_t *>(statement.data()),
          statement.size(), name_));
      signedBy_ = key.id;
      return Status::ok();
    }
    signers.push_back(minisign::keyIdText(signature->id));
  }
  std::string trusted;
  for (const minisign::PublicKey &key : options.trustedKeys)
    trusted += (trusted.empty() ? "" : ", ") + minisign::keyIdText(key.id);
  if (signers.empty())
    return Status::error(name_ + ": not signed: only artifacts signed by a "
                                 "trusted key (" +
                         trusted + ") may load (fmc compile --sign KEY)");
  std::string by;
  for (const std::string &k : signers)
    by += (by.empty() ? "" : ", ") + k;
  return Status::error(name_ + ": signed by key " + by +
                       ", which is not trusted (trusted: " + trusted + ")");
}

format::Digest ArtifactFile::sourceDigest() const {
  return toDigest(root_->source_digest());
}

bool ArtifactFile::hasSourceDigest() const {
  return root_->source_digest() != nullptr;
}

Status ArtifactFile::verify(const Options &options) {
  const std::string &n = name_;
  static const FlatFileKind kArtifact = {
      "artifact",          format::kFileIdentifier, nullptr, nullptr,
      "schema version",    format::kSchemaVersion,
      "recompile the model with this fmc"};
  const Expected<u64> frame = checkFlatFrame(n, head_, size_, kArtifact);
  if (!frame)
    return frame.status();
  const u64 fbEnd = *frame;
  FM_RETURN_IF_ERROR(
      checkFlatVersion<fa::ArtifactHeader>(n, head_, fbEnd, kArtifact));
  {
    // The defaults cap tables at a million; a big model's command list is
    // far below that.
    flatbuffers::Verifier verifier(head_, fbEnd);
    if (!fa::VerifySizePrefixedArtifactBuffer(verifier))
      return flatFileCorrupt(n);
  }
  root_ = fa::GetSizePrefixedArtifact(head_);

  const u64 dataStart = format::alignData(fbEnd);
  dataSize_ = root_->data_size();
  if (dataSize_ > 0 && (dataStart > size_ || dataSize_ > size_ - dataStart))
    return Status::error(n + ": truncated: data section ends at " +
                         std::to_string(satAdd(dataStart, dataSize_)) +
                         " but the file has " + std::to_string(size_) +
                         " bytes");
  data_ = base_ + (dataStart <= size_ ? dataStart : size_);

  if (!root_->program_digest() || !root_->weights_digest())
    return Status::error(n + ": corrupt: the artifact has no digests");
  if (options.checkProgramDigest) {
    const size_t at = reinterpret_cast<const uint8_t *>(root_->program_digest()) -
                      head_;
    const format::Digest actual =
        format::programDigest(head_, std::min<u64>(dataStart, size_), at);
    if (actual != programDigest())
      return Status::error(n + ": corrupt: the program digest does not match "
                               "(the commands or the executables changed): "
                               "the file hashes to " +
                           hex(actual) + ", it says " + hex(programDigest()));
  }

  if (!options.trustedKeys.empty()) {
    // The signature covers the digests; only a checked program digest
    // ties them to the bytes that run.
    if (!options.checkProgramDigest)
      return Status::error(n + ": a signature cannot be checked without the "
                               "program digest");
    FM_RETURN_IF_ERROR(checkSignature(options));
  }

  Checker checker(name_, *root_, dataSize_);
  FM_RETURN_IF_ERROR(checker.run(&hasDispatch_));
  if (hasDispatch_ && root_->executables()->size() == 0)
    return Status::error(n + ": the programs dispatch generated code but the "
                             "artifact has no executable");
  FM_RETURN_IF_ERROR(verifyTokenizer());

  if (options.checkWeightsDigest) {
    const format::Digest actual = format::digest(data_, dataSize_);
    if (actual != weightsDigest())
      return Status::error(n + ": weights digest mismatch: the data section "
                               "hashes to " +
                           hex(actual) + ", the artifact says " +
                           hex(weightsDigest()));
  }
  return Status::ok();
}

namespace {

class Describer final : public rt::DescribeContext {
public:
  Describer(const fa::Artifact &root, bool oneRow)
      : root_(root), oneRow_(oneRow) {}
  std::string weightName(uint32_t i) const override {
    return i < root_.weights()->size() ? root_.weights()->Get(i)->name()->str()
                                       : "?";
  }
  std::string cacheName(uint32_t i) const override {
    return i < root_.caches()->size() ? root_.caches()->Get(i)->name()->str()
                                      : "?";
  }
  std::string functionName(uint32_t i) const override {
    if (root_.executables()->size() == 0)
      return "function " + std::to_string(i);
    const auto *fns = root_.executables()->Get(0)->functions();
    return i < fns->size() ? fns->Get(i)->name()->str() : "?";
  }
  bool oneRow() const override { return oneRow_; }

private:
  const fa::Artifact &root_;
  bool oneRow_;
};

} // namespace

CommandText ArtifactFile::describe(uint32_t program, uint32_t index) const {
  const fa::Program &p = *root_->programs()->Get(program);
  const fa::Command &c = *p.commands()->Get(index);
  CommandText out;
  const rt::CommandKind *kind = rt::commandKind(c.op_type());
  out.op = kind ? kind->name : "?";
  if (kind)
    kind->describe(Describer(*root_, p.max_rows() <= 1 || c.last_row_only()), c,
                   out);
  return out;
}

} // namespace fm
