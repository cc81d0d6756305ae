// The executor: runs a verified artifact's programs on a device, a loop over
// kernels that the device prepared once per command.
#pragma once

#include "fm/artifact.h"
#include "fm/communicator.h"
#include "fm/status.h"
#include "hal/Device.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fm::rt {

/// The device-side state of a loaded model that every session shares: the
/// device, its view of the weights, and the loaded executable.
struct LoadedModel {
  const ArtifactFile *artifact = nullptr;
  hal::Device *device = nullptr;
  hal::Buffer *weights = nullptr;          // the data section on the device
  const hal::Executable *executable = nullptr; // null: not loaded
};

struct LoraPiece;
/// Per base weight index, what attached LoRA adapters add (Lora.h).
using LoraTable = std::vector<std::vector<LoraPiece>>;

struct ExecutorOptions {
  int threads = 0; // <= 0: one per core
  kernels::QActivations activations = kernels::QActivations::Int8x2;
  Communicator *comm = nullptr; // null: this process alone
};

/// The state one session runs in: an arena (the largest program's), the KV
/// caches (zeroed; per cache, slot s holds K then V, each
/// [capacity][kv_heads * head_dim] of f32, or of int8 for an i8 cache), the
/// device kernels of every command, and the queues they run on. run()
/// allocates nothing, but for the first run of a program, where its kernels
/// make what only runs need (Kernel::beforeFirstRun: the CPU's GEMM copies).
///
/// Track sections (consecutive commands of one track block) run their
/// tracks concurrently, one track queue each (Queue::runConcurrently).
/// Commands of another rank than this one are dropped at create().
class Executor {
public:
  /// `model` (and what it points to) must outlive the executor, and so must
  /// options.comm. A model partitioned over N > 1 ranks needs exactly N
  /// ranks; rank r runs rank r's commands and those of no particular rank.
  static Expected<std::unique_ptr<Executor>> create(const LoadedModel &model,
                                                    const ExecutorOptions &options);
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
  int threads() const { return queue_->threads(); }
  /// The communicator (a SingleProcess one when none was given).
  Communicator &comm() const { return *comm_; }
  /// The rank of the partition this process runs.
  int rank() const { return rank_; }
  const hal::CollectiveStats &collectiveStats() const { return collectives_; }
  /// Milliseconds the device spent on this executor's runs (GPU timestamps;
  /// negative where the device does not measure it, as on the CPU).
  double deviceMs() const { return queue_->deviceMs(); }
  hal::Queue::LaunchCounts launchCounts() const { return queue_->launchCounts(); }
  /// Milliseconds spent in Kernel::beforeFirstRun (the CPU's one-time GEMM
  /// repack of packed weights), inside the first run of each program.
  double firstRunMs() const { return firstRunMs_; }

  /// Prepares every MatMul kernel again with the side paths of `lora` (per
  /// base weight index; null: none, the kernels the executor started
  /// with), growing the queues' scratch when the side paths need more.
  /// `lora` and the buffers it names must outlive the kernels (until the
  /// next call or the executor's end). On error the old kernels stay.
  Status setLora(const LoraTable *lora);

  /// Runs `program` on `rows` tokens at positions pos .. pos + rows - 1.
  /// Requires 1 <= rows <= max_rows, pos + rows <= every cache's capacity,
  /// and tokens in [0, vocab) when the program embeds them. `embedRows`
  /// (null, or `rows` pointers): the image tokens that replace the
  /// embedding of the rows whose pointer is not null.
  Status run(int program, const int32_t *tokens, int64_t rows, int64_t pos,
             const float *const *embedRows = nullptr);

  /// Whether `program` is an encode_image program (runImage runs it).
  bool isImageProgram(int program) const {
    return programs_[program].imageFloats > 0;
  }
  /// Writes the `floats` floats of `image` ([channels][height][width], as
  /// the program's ImageInput says) into its input buffer and runs it.
  Status runImage(int program, const float *image, int64_t floats);
  /// The output of the last run of an encode_image program: max_rows rows
  /// of its output width, copied to `out` (rows × width floats).
  Status readOutput(int program, float *out);
  /// The rows and width of an encode_image program's output.
  int64_t outputWidth(int program) const { return programs_[program].logits.width; }

  /// Row `r` of the logits of the last run of `program` (r < rows, or 0
  /// when the program keeps only the last row's logits): vocab floats,
  /// valid until the next run.
  Expected<const float *> logitsRow(int program, int64_t r);

  /// The activation arena, as the last run left it (for tests and
  /// debugging: every buffer of a program lies in it at its offset); null
  /// on a device whose memory the host cannot address.
  const uint8_t *arena() const { return arena_->host(); }
  /// Row 0 of a cache slot's K (or V) part, f32 or int8 rows of
  /// kv_heads * head_dim (cache and slot in range; host devices only, for
  /// tests and debugging).
  const void *cacheRows(uint32_t cache, uint32_t slot, bool v) const {
    const Cache &c = caches_[cache];
    return c.buffer->host() + (2 * uint64_t(slot) + (v ? 1 : 0)) * c.partBytes;
  }
  /// Bytes the KV caches take, all together.
  uint64_t cacheBytes() const {
    uint64_t bytes = 0;
    for (const Cache &c : caches_)
      bytes += c.buffer->size();
    return bytes;
  }

  /// Bytes this executor allocated: the caches, the arena and each
  /// queue's kernel scratch (what a session adds to the process).
  uint64_t allocatedBytes() const { return allocatedBytes_; }

private:
  /// A KV cache: slots × (K, V) parts of partBytes each.
  struct Cache {
    std::unique_ptr<hal::Buffer> buffer;
    uint64_t partBytes = 0;
    int64_t capacity = 0, width = 0;
    bool int8 = false;
  };
  struct Step {
    std::unique_ptr<hal::Kernel> kernel;
    const artifact::Command *command = nullptr; // for setLora
    uint32_t index = 0;                   // in its program's commands
    bool lastRowOnly = false;
    int64_t rows = 0; // > 0: this many rows whatever the launch (Command.rows)
    int32_t section = -1; // index into Program::sections
    int32_t track = -1;
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
    hal::Rows logits;
    /// encode_image: where the image goes, and its size in floats.
    uint64_t imageOffset = 0;
    int64_t imageFloats = 0;
    std::vector<Step> steps;
    std::vector<Section> sections;
    bool ran = false; // its kernels' beforeFirstRun were called
  };
  class Builder;

  Executor() = default;
  Status build(const LoadedModel &model, const ExecutorOptions &options);
  /// The session's queue and track queues, with `scratch` bytes each.
  Status createQueues(uint64_t scratch);
  /// Kernel::beforeFirstRun of p's steps, once (what only runs need: a
  /// program that never runs costs nothing).
  Status beforeFirstRun(Program &p);
  /// The steps of `p`: `last` for last_row_only steps, `all` for the rest.
  Status runSteps(const Program &p, const hal::Launch &all,
                  const hal::Launch &last);

  std::string name_; // the artifact's, for messages
  hal::Device *device_ = nullptr;
  LoadedModel model_;
  ExecutorOptions options_;
  const LoraTable *lora_ = nullptr;
  uint64_t scratch_ = 0; // bytes of scratch the queues have
  double firstRunMs_ = 0.0; // in beforeFirstRun (firstRunMs)
  int lanes_ = 1;        // track queues wanted (tracks that run at once)
  std::vector<Program> programs_;
  std::vector<Cache> caches_;
  std::unique_ptr<hal::Buffer> arena_;
  std::unique_ptr<hal::Queue> queue_;
  std::vector<std::unique_ptr<hal::Queue>> trackQueues_;
  /// Host copy of a logits row, for devices the host cannot address.
  std::vector<float> logitsHost_;
  SingleProcess single_;
  Communicator *comm_ = &single_;
  int rank_ = 0;
  hal::CollectiveStats collectives_;
  int64_t capacity_ = INT64_MAX;
  int64_t vocab_ = 0;
  uint64_t allocatedBytes_ = 0;
};

} // namespace fm::rt
