// The executor loop, and the translation of commands into device kernels
// (each command kind's build() in runtime/src/commands/).
#include "Executor.h"

#include "Lora.h"
#include "commands/Command.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

namespace fm::rt {

namespace fa = fm::artifact;

/// The executor's answers to a command kind's build().
class Executor::Builder final : public BuildContext {
public:
  Builder(Executor &e, const LoadedModel &model, const ExecutorOptions &options)
      : e_(e), model_(model), options_(options) {}

  void setCommand(const std::string &program, uint32_t index, int64_t rows) {
    program_ = program;
    command_ = index;
    maxRows_ = rows;
  }

  hal::Device &device() override { return *model_.device; }
  hal::Rows rows(const fa::BufferRef &b) override {
    hal::Rows r;
    r.buffer = e_.arena_.get();
    r.offset = b.offset();
    r.stride = b.stride() / sizeof(float);
    r.width = b.width();
    return r;
  }
  hal::WeightDesc weight(uint32_t index) override {
    const fa::Weight &w = *model_.artifact->root().weights()->Get(index);
    hal::WeightDesc d;
    d.buffer = model_.weights;
    d.offset = w.offset();
    d.bytes = w.size();
    // A variant in a layout this device reads replaces the shared bytes,
    // or comes beside them.
    if (w.variants())
      for (const fa::WeightVariant *v : *w.variants()) {
        if (v->target()->str() != model_.device->target())
          continue;
        const std::string layout = v->layout()->str();
        if (model_.device->readsBeside(layout)) {
          d.beside.layout = layout;
          d.beside.offset = v->offset();
          d.beside.bytes = v->size();
        } else if (model_.device->readsLayout(layout)) {
          d.offset = v->offset();
          d.bytes = v->size();
          d.layout = layout;
        }
      }
    if (isQuantized(w.dtype())) {
      d.kind = hal::WeightKind::Quant;
      d.format = quantFormatOf(w);
    } else {
      d.kind = w.dtype() == fa::DType::F16 ? hal::WeightKind::F16
                                           : hal::WeightKind::F32;
    }
    d.shape.assign(w.shape()->begin(), w.shape()->end());
    d.name = w.name()->str();
    return d;
  }
  hal::CacheRows cache(uint32_t cache, uint32_t slot, bool v) override {
    const Cache &c = e_.caches_[cache];
    hal::CacheRows r;
    r.buffer = c.buffer.get();
    r.offset = (2 * uint64_t(slot) + (v ? 1 : 0)) * c.partBytes;
    r.capacity = c.capacity;
    r.width = c.width;
    r.int8 = c.int8;
    return r;
  }
  float scalar(uint32_t index) override {
    float value = 0.0f;
    std::memcpy(&value, model_.artifact->weightData(index), sizeof(value));
    return value;
  }
  const hal::Executable *executable() override { return model_.executable; }
  Communicator *communicator() override { return e_.comm_; }
  int rank() override { return e_.rank_; }
  hal::CollectiveStats *collectiveStats() override { return &e_.collectives_; }
  kernels::QActivations activations() override { return options_.activations; }
  int threads() override {
    return options_.threads > 0
               ? options_.threads
               : std::max(1, int(std::thread::hardware_concurrency()));
  }
  void loraTerms(uint32_t weight, int64_t col0, int64_t rows,
                 std::vector<hal::LoraTerm> &out) override {
    if (!e_.lora_ || weight >= e_.lora_->size())
      return;
    for (const LoraPiece &p : (*e_.lora_)[weight]) {
      hal::LoraTerm t;
      t.a = p.a;
      t.bt = p.bt;
      t.rank = p.rank;
      t.col0 = col0;
      t.rows = rows;
      t.scale = p.scale;
      out.push_back(std::move(t));
    }
  }
  int64_t maxRows() override { return maxRows_; }
  std::string where() override {
    return e_.name_ + ": program '" + program_ + "': command " +
           std::to_string(command_);
  }

private:
  Executor &e_;
  const LoadedModel &model_;
  const ExecutorOptions &options_;
  int64_t maxRows_ = 1;
  std::string program_;
  uint32_t command_ = 0;
};

Expected<std::unique_ptr<Executor>>
Executor::create(const LoadedModel &model, const ExecutorOptions &options) {
  std::unique_ptr<Executor> e(new Executor());
  FM_RETURN_IF_ERROR(e->build(model, options));
  return e;
}

Executor::~Executor() = default;

Status Executor::build(const LoadedModel &model,
                       const ExecutorOptions &options) {
  const fa::Artifact &root = model.artifact->root();
  hal::Device &device = *model.device;
  device_ = &device;
  model_ = model;
  options_ = options;
  name_ = model.artifact->name();
  vocab_ = root.vocab_size();
  auto withName = [&](const Status &s) {
    return Status::error(name_ + ": " + s.message());
  };

  // Which rank's commands this process runs. A partitioned model needs one
  // process per rank: with fewer, some rank's partial sums would be
  // missing; with more, they would be counted twice.
  if (options.comm)
    comm_ = options.comm;
  const int64_t ranks = root.ranks(), processes = comm_->size();
  if (processes != ranks && (ranks > 1 || processes > 1)) {
    if (processes == 1)
      return Status::error(name_ + " is partitioned over " +
                           std::to_string(ranks) +
                           " ranks: run it on as many (mpirun -np " +
                           std::to_string(ranks) + ")");
    return Status::error(name_ + " is partitioned over " +
                         std::to_string(ranks) +
                         (ranks == 1 ? " rank" : " ranks") + " but mpirun started " +
                         std::to_string(processes) + " processes");
  }
  rank_ = static_cast<int>(comm_->rank() % ranks);
  // How the ranks' sums travel, agreed by every rank before any kernel is
  // prepared (NCCL where every rank's device has it, else the host).
  if (Status s = hal::agreeCollectives(device, *comm_); !s)
    return withName(s);

  // KV caches: f32, or int8 (1 byte per element) for an i8 cache.
  const auto *caches = root.caches();
  caches_.resize(caches->size());
  for (flatbuffers::uoffset_t i = 0; i < caches->size(); ++i) {
    const fa::KvCache *c = caches->Get(i);
    Cache &cache = caches_[i];
    cache.width = int64_t(c->kv_heads()) * c->head_dim();
    cache.capacity = c->capacity();
    cache.int8 = c->dtype() == fa::DType::I8;
    cache.partBytes = uint64_t(c->capacity()) * cache.width * dtypeSize(c->dtype());
    auto buffer = device.allocate(uint64_t(c->slots()) * 2 * cache.partBytes,
                                  hal::MemorySpace::Device);
    if (!buffer)
      return withName(Status::error("KV cache '" + c->name()->str() + "': " +
                                    buffer.message()));
    cache.buffer = std::move(*buffer);
    capacity_ = std::min<int64_t>(capacity_, c->capacity());
  }

  // One arena serves every program: programs share nothing through it.
  uint64_t arenaBytes = 0;
  for (const fa::Program *program : *root.programs())
    arenaBytes = std::max<uint64_t>(arenaBytes, program->arena_bytes());
  auto arena = device.allocate(arenaBytes, hal::MemorySpace::Device);
  if (!arena)
    return withName(Status::error("the activation arena: " + arena.message()));
  arena_ = std::move(*arena);

  Builder builder(*this, model, options);
  uint64_t scratch = 0;
  int lanes = 1;
  for (const fa::Program *program : *root.programs()) {
    Program p;
    p.phase = program->phase()->str();
    p.maxRows = program->max_rows();
    p.logitsLastRowOnly = program->logits_last_row_only();
    p.logits = builder.rows(*program->logits());
    if (const fa::ImageInput *image = program->image()) {
      p.imageOffset = image->buffer()->offset();
      p.imageFloats = image->buffer()->width();
    }
    p.steps.reserve(program->commands()->size());
    // Sections follow the artifact's command order: a run of commands of
    // one block (whichever of them this rank drops).
    int32_t lastBlock = -1;
    uint32_t sectionSerial = 0, index = 0;
    std::vector<uint32_t> stepSerial; // per step: its section's serial
    for (const fa::Command *command : *program->commands()) {
      const uint32_t commandIndex = index++;
      const int32_t block = command->block();
      if (block >= 0 && block != lastBlock)
        ++sectionSerial;
      lastBlock = block;
      if (command->rank() >= 0 && command->rank() != rank_)
        continue; // Another rank's share.
      if (command->op_type() == fa::Op::Embed)
        p.embeds = true;
      Step s;
      s.command = command;
      s.index = commandIndex;
      s.lastRowOnly = command->last_row_only();
      s.rows = command->rows();
      s.track = block >= 0 ? command->track() : -1;
      builder.setCommand(p.phase, commandIndex,
                         s.rows > 0 ? s.rows : s.lastRowOnly ? 1 : p.maxRows);
      auto kernel = commandKind(command->op_type())->build(builder, *command);
      if (!kernel) {
        std::string where = "program '" + p.phase + "' command " +
                            std::to_string(commandIndex);
        if (command->layer() && command->layer()->size())
          where += " (" + command->layer()->str() + ")";
        return withName(Status::error(where + ": " + kernel.message()));
      }
      s.kernel = std::move(*kernel);
      scratch = std::max(scratch, s.kernel->scratchBytes());
      p.steps.push_back(std::move(s));
      stepSerial.push_back(block >= 0 ? sectionSerial : 0);
    }

    // Sections: runs of steps with one section serial, regrouped by track
    // (tracks ascending, each in command order).
    for (size_t i = 0; i < p.steps.size();) {
      if (stepSerial[i] == 0) {
        ++i;
        continue;
      }
      size_t end = i;
      while (end < p.steps.size() && stepSerial[end] == stepSerial[i])
        ++end;
      Section sec;
      sec.begin = static_cast<uint32_t>(i);
      sec.end = static_cast<uint32_t>(end);
      std::vector<int32_t> tracks;
      for (size_t j = i; j < end; ++j)
        tracks.push_back(p.steps[j].track);
      std::sort(tracks.begin(), tracks.end());
      tracks.erase(std::unique(tracks.begin(), tracks.end()), tracks.end());
      for (int32_t t : tracks) {
        sec.trackBegin.push_back(static_cast<uint32_t>(sec.order.size()));
        for (size_t j = i; j < end; ++j)
          if (p.steps[j].track == t)
            sec.order.push_back(static_cast<uint32_t>(j));
      }
      sec.trackBegin.push_back(static_cast<uint32_t>(sec.order.size()));
      const int32_t id = static_cast<int32_t>(p.sections.size());
      for (size_t j = i; j < end; ++j)
        p.steps[j].section = id;
      lanes = std::max(lanes, sec.numTracks());
      p.sections.push_back(std::move(sec));
      i = end;
    }
    programs_.push_back(std::move(p));
  }

  lanes_ = lanes;
  FM_RETURN_IF_ERROR(createQueues(scratch));
  if (!arena_->host())
    logitsHost_.resize(static_cast<size_t>(vocab_));
  allocatedBytes_ = cacheBytes() + arenaBytes +
                    scratch * (1 + uint64_t(trackQueues_.size()));
  return Status::ok();
}

Status Executor::createQueues(uint64_t scratch) {
  hal::QueueOptions qo;
  qo.threads = options_.threads;
  qo.scratchBytes = scratch;
  auto queue = device_->createQueue(qo);
  if (!queue)
    return Status::error(name_ + ": " + queue.message());
  // A track queue per track that may run at once (none on one thread: the
  // tracks then run in turn on the session's queue).
  std::vector<std::unique_ptr<hal::Queue>> lanes;
  if ((*queue)->threads() > 1 && lanes_ > 1) {
    qo.threads = 1;
    qo.trackLane = true;
    for (int t = 0; t < lanes_; ++t) {
      auto lane = device_->createQueue(qo);
      if (!lane)
        return Status::error(name_ + ": " + lane.message());
      lanes.push_back(std::move(*lane));
    }
  }
  queue_ = std::move(*queue);
  trackQueues_ = std::move(lanes);
  scratch_ = scratch;
  return Status::ok();
}

Status Executor::setLora(const LoraTable *lora) {
  // Every MatMul kernel again, into new lists first: on error nothing
  // changes.
  const LoraTable *before = lora_;
  lora_ = lora;
  Builder builder(*this, model_, options_);
  std::vector<std::pair<Step *, std::unique_ptr<hal::Kernel>>> rebuilt;
  uint64_t scratch = 0;
  for (Program &p : programs_)
    for (Step &s : p.steps) {
      if (s.command->op_type() != fa::Op::MatMul) {
        scratch = std::max(scratch, s.kernel->scratchBytes());
        continue;
      }
      builder.setCommand(p.phase, s.index, s.lastRowOnly ? 1 : p.maxRows);
      auto kernel = commandKind(fa::Op::MatMul)->build(builder, *s.command);
      if (!kernel) {
        lora_ = before;
        return Status::error(name_ + ": program '" + p.phase + "' command " +
                             std::to_string(s.index) + ": " + kernel.message());
      }
      scratch = std::max(scratch, (*kernel)->scratchBytes());
      rebuilt.emplace_back(&s, std::move(*kernel));
    }
  if (scratch > scratch_) {
    if (Status st = createQueues(scratch); !st) {
      lora_ = before;
      return st;
    }
  }
  for (auto &[step, kernel] : rebuilt)
    step->kernel = std::move(kernel);
  // The new kernels of programs that ran get ready again at their next run.
  for (Program &p : programs_)
    p.ran = false;
  return Status::ok();
}

int Executor::findProgram(const std::string &phase) const {
  for (size_t i = 0; i < programs_.size(); ++i)
    if (programs_[i].phase == phase)
      return static_cast<int>(i);
  return -1;
}

Status Executor::runImage(int program, const float *image, int64_t floats) {
  if (program < 0 || program >= numPrograms() || !isImageProgram(program))
    return Status::error(name_ + ": no encode_image program " +
                         std::to_string(program));
  const Program &p = programs_[program];
  if (floats != p.imageFloats)
    return Status::error(name_ + ": program '" + p.phase + "': an image of " +
                         std::to_string(floats) + " floats, it takes " +
                         std::to_string(p.imageFloats));
  FM_RETURN_IF_ERROR(device_->upload(*arena_, p.imageOffset, image,
                                     uint64_t(floats) * sizeof(float)));
  FM_RETURN_IF_ERROR(beforeFirstRun(programs_[program]));
  // Every command runs on its fixed rows (the static shapes of one image).
  for (const Step &s : p.steps) {
    const hal::Launch launch{s.rows > 0 ? s.rows : p.maxRows, 0, nullptr,
                             nullptr};
    FM_RETURN_IF_ERROR(s.kernel->run(*queue_, launch));
  }
  return queue_->flush(); // a recording device (a GPU) runs them here
}

Status Executor::readOutput(int program, float *out) {
  const Program &p = programs_[program];
  const uint64_t rowBytes = uint64_t(p.logits.width) * sizeof(float);
  for (int64_t r = 0; r < p.maxRows; ++r)
    FM_RETURN_IF_ERROR(device_->download(
        *arena_, p.logits.offset + uint64_t(r) * p.logits.stride * sizeof(float),
        out + r * p.logits.width, rowBytes));
  return Status::ok();
}

Status Executor::run(int program, const int32_t *tokens, int64_t rows,
                     int64_t pos, const float *const *embedRows) {
  if (program < 0 || program >= numPrograms())
    return Status::error(name_ + ": no program " + std::to_string(program));
  const Program &p = programs_[program];
  const std::string where = name_ + ": program '" + p.phase + "': ";
  if (p.imageFloats > 0)
    return Status::error(where + "runs on an image, not on tokens");
  if (rows < 1 || rows > p.maxRows)
    return Status::error(where + std::to_string(rows) +
                         " rows requested, it takes 1 to " +
                         std::to_string(p.maxRows));
  if (pos < 0 || pos > capacity_ - rows)
    return Status::error(where + "positions " + std::to_string(pos) + ".." +
                         std::to_string(pos + rows - 1) +
                         " do not fit in the KV cache (capacity " +
                         std::to_string(capacity_) + ")");
  if (p.embeds) {
    if (!tokens)
      return Status::error(where + "no tokens given");
    for (int64_t r = 0; r < rows; ++r)
      if (tokens[r] < 0 || tokens[r] >= vocab_)
        return Status::error(where + "token " + std::to_string(tokens[r]) +
                             " (row " + std::to_string(r) +
                             ") is out of range (vocab " +
                             std::to_string(vocab_) + ")");
  }

  // A last_row_only step sees a 1-row chunk at the chunk's last position;
  // its buffers hold that one row.
  FM_RETURN_IF_ERROR(beforeFirstRun(programs_[program]));
  const hal::Launch all{rows, pos, tokens, embedRows};
  const hal::Launch last{1, pos + rows - 1, tokens ? tokens + rows - 1 : nullptr,
                         embedRows ? embedRows + rows - 1 : nullptr};
  // A device whose kernels record commands (a GPU) runs them at the flush,
  // which also ends a run that failed half way.
  Status status = runSteps(p, all, last);
  Status flushed = queue_->flush();
  return status ? flushed : status;
}

Status Executor::beforeFirstRun(Program &p) {
  if (p.ran)
    return Status::ok();
  const auto t0 = std::chrono::steady_clock::now();
  for (Step &s : p.steps)
    if (Status st = s.kernel->beforeFirstRun(*queue_); !st)
      return Status::error(name_ + ": program '" + p.phase + "' command " +
                           std::to_string(s.index) + ": " + st.message());
  p.ran = true;
  firstRunMs_ += std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
  return Status::ok();
}

Status Executor::runSteps(const Program &p, const hal::Launch &all,
                          const hal::Launch &last) {
  auto launch = [&](const Step &s) -> const hal::Launch & {
    return s.lastRowOnly ? last : all;
  };
  const bool concurrentTracks = !trackQueues_.empty();
  for (size_t i = 0; i < p.steps.size();) {
    const Step &first = p.steps[i];
    if (first.section >= 0 && concurrentTracks) {
      const Section &sec = p.sections[first.section];
      i = sec.end;
      if (sec.numTracks() > 1) {
        // Each track's steps in order, tracks concurrently, each on its own
        // queue. Steps inside a section cannot fail (AllReduce is never in
        // one, and the others only fail at build time).
        queue_->runConcurrently(sec.numTracks(), [&](int64_t t) {
          hal::Queue &lane = *trackQueues_[t];
          for (uint32_t j = sec.trackBegin[t]; j < sec.trackBegin[t + 1]; ++j) {
            const Step &s = p.steps[sec.order[j]];
            (void)s.kernel->run(lane, launch(s));
          }
        });
        continue;
      }
      for (uint32_t j = sec.begin; j < sec.end; ++j)
        FM_RETURN_IF_ERROR(
            p.steps[j].kernel->run(*queue_, launch(p.steps[j])));
      continue;
    }
    FM_RETURN_IF_ERROR(first.kernel->run(*queue_, launch(first)));
    ++i;
  }
  return Status::ok();
}

Expected<const float *> Executor::logitsRow(int program, int64_t r) {
  const Program &p = programs_[program];
  const uint64_t offset =
      p.logits.offset + uint64_t(r) * p.logits.stride * sizeof(float);
  if (const uint8_t *host = arena_->host())
    return reinterpret_cast<const float *>(host + offset);
  FM_RETURN_IF_ERROR(device_->download(*arena_, offset, logitsHost_.data(),
                                       uint64_t(vocab_) * sizeof(float)));
  return static_cast<const float *>(logitsHost_.data());
}

} // namespace fm::rt
