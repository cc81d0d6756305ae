// The executor: runs a verified artifact's programs, a loop over commands
// with every pointer resolved up front.
#pragma once

#include "Artifact.h"
#include "CpuExecutable.h"
#include "fm/status.h"
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

/// The state one session runs in: an arena (the largest program's), the KV
/// caches (zeroed; per cache, slot s holds K then V, each
/// [capacity][kv_heads * head_dim]), scratch for matmuls with strided
/// operands, and a thread pool. Programs are translated into steps with
/// resolved pointers once, at create(): run() allocates nothing.
class Executor {
public:
  /// `artifact` and `executable` (null when the generated code is not
  /// loaded; programs that dispatch then fail in run()) must outlive the
  /// executor.
  static Expected<std::unique_ptr<Executor>>
  create(const Artifact &artifact, const CpuExecutable *executable,
         int threads);
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

private:
  struct Ref {
    float *p = nullptr;
    int64_t stride = 0;
    int64_t width = 0;
  };
  /// Weights of a MatMul that lie back to back: one kernel call.
  struct WeightGroup {
    const void *w = nullptr;
    int64_t rows = 0;
    int64_t col0 = 0; // first column of y
  };
  struct Step {
    uint8_t op = 0; // fm::artifact::Op
    bool lastRowOnly = false;
    uint32_t command = 0;
    Ref a, b; // Embed: out; MatMul: x, y; Attention: q, out; Copy: src, dst
    bool f16 = false; // weights (Embed, MatMul)
    const void *table = nullptr;
    int64_t k = 0, n = 0;
    bool accumulate = false;
    uint32_t group0 = 0, groups = 0;
    const float *kCache = nullptr, *vCache = nullptr;
    int64_t capacity = 0, heads = 0, kvHeads = 0, headDim = 0, window = 0;
    float scale = 1.0f;
    CpuExecutable::Function fn = nullptr;
    void **args = nullptr;
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
  };

  Executor() = default;
  Status build(const Artifact &artifact, const CpuExecutable *executable,
               int threads);
  void matmul(const Step &s, int64_t M);
  void attention(const Step &s, int64_t S, int64_t pos0);

  std::string name_; // the artifact's, for messages
  std::vector<Program> programs_;
  std::vector<WeightGroup> groups_;
  std::vector<void *> args_;
  std::vector<FloatBlock> caches_;
  FloatBlock arena_, scratchX_, scratchY_;
  std::unique_ptr<ThreadPool> pool_;
  int64_t capacity_ = INT64_MAX;
  int64_t vocab_ = 0;
};

} // namespace fm::rt
