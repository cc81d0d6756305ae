// The executor: runs a verified artifact's programs, a loop over commands
// with every pointer resolved up front.
#pragma once

#include "Artifact.h"
#include "CpuExecutable.h"
#include "Linear.h"
#include "QuantMoe.h"
#include "fm/communicator.h"
#include "fm/status.h"
#include "kernels/moe.h"
#include "src/ThreadPool.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fm::rt {

/// A zeroed, 64-byte-aligned block of floats (an anonymous mapping where
/// there is one, so untouched pages cost no memory).
class FloatBlock {
public:
  FloatBlock() = default;
  ~FloatBlock();
  FloatBlock(const FloatBlock &) = delete;
  FloatBlock &operator=(const FloatBlock &) = delete;
  FloatBlock(FloatBlock &&other) noexcept;
  FloatBlock &operator=(FloatBlock &&other) noexcept;

  /// False when the memory is not available.
  bool allocate(uint64_t floats);
  float *data() const { return data_; }
  uint64_t size() const { return floats_; }

private:
  void release();
  float *data_ = nullptr;
  uint64_t floats_ = 0;
  size_t bytes_ = 0;
  bool mapped_ = false;
};

/// Counters of the collectives a session ran.
struct CollectiveStats {
  int64_t allReduces = 0; // AllReduce commands run
  double ms = 0.0;        // wall time in them (the reduction and the scale)
};

/// The state one session runs in: an arena (the largest program's), the KV
/// caches (zeroed; per cache, slot s holds K then V, each
/// [capacity][kv_heads * head_dim] of f32, or of int8 for an i8 cache: a
/// quarter of the memory), scratch for matmuls with strided operands and
/// for Moe, and a thread pool. Programs are translated into
/// steps with resolved pointers once, at create(): run() allocates nothing.
///
/// Track sections (consecutive commands of one track block) run their
/// tracks concurrently, one task per track on the pool, each calling the
/// kernels single-threaded with its own scratch ("lane"). Commands of
/// another device than this rank's are dropped at create().
class Executor {
public:
  /// `artifact` and `executable` (null when the generated code is not
  /// loaded; programs that dispatch then fail in run()) must outlive the
  /// executor, and so must `comm` (null: this process alone). A model
  /// partitioned over N > 1 devices needs exactly N ranks; rank r runs
  /// device r's commands and those of no particular device (-1).
  static Expected<std::unique_ptr<Executor>>
  create(const Artifact &artifact, const CpuExecutable *executable,
         int threads, Communicator *comm = nullptr);
  ~Executor();

  /// Program index of `phase`, or -1.
  int findProgram(const std::string &phase) const;
  int numPrograms() const { return static_cast<int>(programs_.size()); }
  const std::string &phase(int program) const { return programs_[program].phase; }
  int64_t maxRows(int program) const { return programs_[program].maxRows; }
  bool logitsLastRowOnly(int program) const {
    return programs_[program].logitsLastRowOnly;
  }
  /// The smallest cache capacity; INT64_MAX without caches.
  int64_t capacity() const { return capacity_; }
  int64_t vocab() const { return vocab_; }
  int threads() const { return pool_->numThreads(); }
  /// The communicator (a SingleProcess one when none was given).
  Communicator &comm() const { return *comm_; }
  /// The artifact's device this rank runs.
  int device() const { return device_; }
  const CollectiveStats &collectiveStats() const { return collectives_; }

  /// Runs `program` on `rows` tokens at positions pos .. pos + rows - 1.
  /// Requires 1 <= rows <= max_rows, pos + rows <= every cache's capacity,
  /// and tokens in [0, vocab) when the program embeds them.
  Status run(int program, const int32_t *tokens, int64_t rows, int64_t pos);

  /// Row `r` of the logits of the last run of `program` (r < rows, or 0
  /// when the program keeps only the last row's logits).
  const float *logitsRow(int program, int64_t r) const {
    const Program &p = programs_[program];
    return p.logits + r * p.logitsStride;
  }

  /// The activation arena, as the last run left it (for tests and
  /// debugging: every buffer of a program lies in it at its offset).
  const float *arena() const { return arena_.data(); }
  /// Row 0 of a cache slot's K (or V) part: f32 or int8 rows of
  /// kv_heads * head_dim, as the cache's dtype says (cache and slot in
  /// range; for tests and debugging).
  const void *cacheRows(uint32_t cache, uint32_t slot, bool v) const {
    const Cache &c = caches_[cache];
    return reinterpret_cast<const uint8_t *>(c.block.data()) +
           (2 * uint64_t(slot) + (v ? 1 : 0)) * c.partBytes;
  }
  /// Bytes the KV caches take, all together.
  uint64_t cacheBytes() const {
    uint64_t bytes = 0;
    for (const Cache &c : caches_)
      bytes += c.bytes;
    return bytes;
  }

private:
  struct Ref {
    float *p = nullptr;
    int64_t stride = 0;
    int64_t width = 0;
  };
  /// Weights of a MatMul of one layout that lie back to back: one kernel
  /// call.
  struct WeightGroup {
    WeightRef w;
    int64_t rows = 0;
    int64_t col0 = 0; // first column of y
  };
  /// A KV cache: slots × (K, V) parts of partBytes each.
  struct Cache {
    FloatBlock block;
    uint64_t partBytes = 0, bytes = 0;
  };
  struct Step {
    uint8_t op = 0; // fm::artifact::Op
    bool lastRowOnly = false;
    uint32_t command = 0;
    int32_t section = -1; // index into Program::sections
    int32_t track = -1;
    // Embed: out; MatMul: x, y; Attention: q, out; Copy: src, dst;
    // Moe: x, y; AllReduce: buffer.
    Ref a, b;
    WeightRef table; // Embed
    int64_t k = 0, n = 0;
    bool accumulate = false;
    uint32_t group0 = 0, groups = 0;
    // Attention: the slot's rows, f32 or (int8) value * kScale / vScale.
    const void *kCache = nullptr, *vCache = nullptr;
    bool int8 = false;
    float kScale = 1.0f, vScale = 1.0f;
    int64_t capacity = 0, heads = 0, kvHeads = 0, headDim = 0, window = 0;
    float scale = 1.0f; // Attention; AllReduce
    bool quantMoe = false; // Moe: quantMoes_ (else moes_)
    uint32_t moe = 0;      // index into moes_ or quantMoes_
    CpuExecutable::Function fn = nullptr;
    void **args = nullptr;
  };
  /// Consecutive steps of one track block: steps [begin, end) of the
  /// program, regrouped by track: the steps of local track t are
  /// order[trackBegin[t] .. trackBegin[t + 1]).
  struct Section {
    uint32_t begin = 0, end = 0;
    std::vector<uint32_t> order;
    std::vector<uint32_t> trackBegin;
    int numTracks() const { return static_cast<int>(trackBegin.size()) - 1; }
  };
  struct Program {
    std::string phase;
    int64_t maxRows = 0;
    bool logitsLastRowOnly = false;
    bool embeds = false;
    bool dispatches = false;
    float *logits = nullptr;
    int64_t logitsStride = 0;
    std::vector<Step> steps;
    std::vector<Section> sections;
  };
  /// Scratch of one concurrently running track (lane 0 also serves the
  /// steps outside sections).
  struct Lane {
    FloatBlock x, y, moe;
  };

  Executor() = default;
  Status build(const Artifact &artifact, const CpuExecutable *executable,
               int threads, Communicator *comm);
  Status runStep(const Step &s, const int32_t *tokens, int64_t rows,
                 int64_t pos, ThreadPool *pool, Lane &lane);
  void matmul(const Step &s, int64_t M, ThreadPool *pool, Lane &lane);
  void attention(const Step &s, int64_t S, int64_t pos0, ThreadPool *pool);
  void moe(const Step &s, int64_t M, ThreadPool *pool, Lane &lane);
  Status allReduce(const Step &s, int64_t M);

  std::string name_; // the artifact's, for messages
  std::vector<Program> programs_;
  std::vector<WeightGroup> groups_;
  std::vector<void *> args_;
  std::vector<kernels::MoeArgs> moes_;
  std::vector<const void *> moeWeights_; // the experts' gate, up, down
  std::vector<QuantMoeArgs> quantMoes_;
  std::vector<WeightRef> quantMoeWeights_; // their experts' gate, up, down
  std::vector<Cache> caches_;
  FloatBlock arena_, reduceScratch_;
  std::vector<Lane> lanes_;
  std::unique_ptr<ThreadPool> pool_;
  SingleProcess single_;
  Communicator *comm_ = &single_;
  int device_ = 0;
  CollectiveStats collectives_;
  int64_t capacity_ = INT64_MAX;
  int64_t vocab_ = 0;
};

} // namespace fm::rt
