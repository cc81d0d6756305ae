// One place per command kind: how the loader verifies it, which buffers and
// cache slots it touches (for the track-section check), how the executor
// turns it into a device kernel, and how `fmc inspect` describes it. A new
// command is the schema plus one file in this folder and a line in
// Commands.cpp.
#pragma once

#include "fm/artifact.h"
#include "fm/communicator.h"
#include "fm/status.h"
#include "hal/Device.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fm::rt {

namespace fa = fm::artifact;
using u64 = uint64_t;

/// What a command's verifier may ask of the loader (runtime/src/Artifact.cpp
/// implements it). Every check returns an empty string when fine, else why
/// not; fail() turns a reason into the loader's error for this command.
class VerifyContext {
public:
  virtual ~VerifyContext() = default;
  const fa::Artifact &root() const { return root_; }
  /// Rows the command's buffers hold: the program's max_rows, or 1.
  u64 rows() const { return rows_; }

  virtual Status fail(const std::string &what) const = 0;
  virtual std::string bufferProblem(const char *what, const fa::BufferRef &b,
                                    u64 rows) const = 0;
  virtual std::string weightIndexProblem(uint32_t index) const = 0;
  virtual std::string cacheSlotProblem(uint32_t cache, uint32_t slot) const = 0;
  /// "weight 3 ('model.norm.weight')".
  virtual std::string weightName(uint32_t index) const = 0;
  /// Functions every executable exports (0 without executables).
  virtual u64 numFunctions() const = 0;

  /// A buffer check as a Status.
  Status buffer(const char *what, const fa::BufferRef &b, u64 rows) const {
    std::string p = bufferProblem(what, b, rows);
    return p.empty() ? Status::ok() : fail(p);
  }

protected:
  VerifyContext(const fa::Artifact &root, u64 rows) : root_(root), rows_(rows) {}

private:
  const fa::Artifact &root_;
  u64 rows_;
};

/// Whether two buffers may share a byte. Exact for disjoint spans and for
/// column slices of one row layout (same stride); conservative otherwise.
bool mayOverlap(const fa::BufferRef &a, u64 rowsA, const fa::BufferRef &b,
                u64 rowsB);
/// "(offset 0, stride 1024, width 256)" (bytes, bytes, floats).
std::string describe(const fa::BufferRef &b);
/// The packed format of a Q2/Q4/Q8 weight (bits, group, grid); valid
/// (isValidQuantFormat) for every quantized weight of a verified artifact.
kernels::QuantFormat quantFormatOf(const fa::Weight &weight);
/// "[2, 3]".
std::string shapeString(const flatbuffers::Vector<int64_t> *shape);

/// "" when weight `index` is f32 with `elements` floats (any shape; a
/// shape that the kernel reads as flat floats), else why not, naming the
/// weight as `role`.
std::string f32FloatsProblem(const VerifyContext &c, uint32_t index,
                             const std::string &role, u64 elements);
/// The same for a weight of exactly `shape`.
std::string f32WeightProblem(const VerifyContext &c, uint32_t index,
                             const std::string &role,
                             const std::vector<int64_t> &shape);
/// "[2, 3]".
std::string shapeString(const std::vector<int64_t> &shape);

/// One buffer a command reads or writes, or a cache slot it uses.
struct Use {
  const fa::BufferRef *buffer = nullptr; // null: a cache slot
  bool write = false;
  u64 rows = 0;
  uint32_t cache = 0, slot = 0;
  const char *what = "";
};

/// What building a kernel may ask of the executor.
class BuildContext {
public:
  virtual ~BuildContext() = default;
  virtual hal::Device &device() = 0;
  virtual hal::Rows rows(const fa::BufferRef &b) = 0;
  virtual hal::WeightDesc weight(uint32_t index) = 0;
  /// Row 0 of slot `slot`'s K (or V) part of cache `cache`.
  virtual hal::CacheRows cache(uint32_t cache, uint32_t slot, bool v) = 0;
  /// The value of a 0-d f32 weight.
  virtual float scalar(uint32_t index) = 0;
  /// The loaded executable of the device's target (null when not loaded).
  virtual const hal::Executable *executable() = 0;
  virtual Communicator *communicator() = 0;
  /// The rank whose partition this process runs.
  virtual int rank() = 0;
  virtual hal::CollectiveStats *collectiveStats() = 0;
  virtual kernels::QActivations activations() = 0;
  /// The threads the session's queue runs kernels on (at least 1).
  virtual int threads() = 0;
  /// Rows a launch of the command gives at most.
  virtual int64_t maxRows() = 0;
  /// Appends the side paths of the session's LoRA adapters on weight
  /// `weight`, which writes columns [col0, col0 + rows) of the matmul's y
  /// (nothing without adapters).
  virtual void loraTerms(uint32_t weight, int64_t col0, int64_t rows,
                         std::vector<hal::LoraTerm> &out) {
    (void)weight, (void)col0, (void)rows, (void)out;
  }
  /// "model.fmb: program 'prefill': command 2", for messages of kernels
  /// that fail when run.
  virtual std::string where() = 0;
};

/// How a command is written for people (`fmc inspect`).
class DescribeContext {
public:
  virtual ~DescribeContext() = default;
  virtual std::string weightName(uint32_t index) const = 0;
  virtual std::string cacheName(uint32_t index) const = 0;
  virtual std::string functionName(uint32_t index) const = 0;
  /// Whether the command's buffers hold one row (decode, last_row_only).
  virtual bool oneRow() const = 0;
};

/// Appends `"name": value` members to a JSON object's text.
class JsonMembers {
public:
  JsonMembers &add(const char *name, const std::string &value);
  JsonMembers &add(const char *name, const char *value) {
    return add(name, std::string(value));
  }
  JsonMembers &add(const char *name, int64_t value);
  JsonMembers &add(const char *name, uint32_t value) {
    return add(name, static_cast<int64_t>(value));
  }
  JsonMembers &add(const char *name, bool value);
  JsonMembers &add(const char *name, double value);
  JsonMembers &add(const char *name, float value) {
    return add(name, static_cast<double>(value));
  }
  JsonMembers &add(const char *name, const fa::BufferRef &b);
  JsonMembers &add(const char *name, const std::vector<std::string> &values);
  /// `value` is already JSON.
  JsonMembers &addRaw(const char *name, const std::string &value);
  const std::string &str() const { return s_; }

  static std::string quote(const std::string &s);
  static std::string buffer(const fa::BufferRef &b);

private:
  std::string s_;
};

/// "buf@0[rowsx256]" (or "[1x256]" for one row).
std::string bufferText(const fa::BufferRef &b, bool oneRow);

struct CommandKind {
  fa::Op op;
  const char *name; // "matmul"
  /// Checks everything the kind's kernels rely on (placement and track
  /// sections are checked for every kind by the loader).
  Status (*verify)(const VerifyContext &context, const fa::Command &command);
  /// The buffers and cache slots the command touches, `rows` rows each.
  void (*uses)(const fa::Command &command, u64 rows, std::vector<Use> &out);
  Expected<std::unique_ptr<hal::Kernel>> (*build)(BuildContext &context,
                                                  const fa::Command &command);
  void (*describe)(const DescribeContext &context, const fa::Command &command,
                   CommandText &out);
};

/// The kind of `op`, or null for NONE and values newer than this runtime.
const CommandKind *commandKind(fa::Op op);

} // namespace fm::rt
