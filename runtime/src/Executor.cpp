// The executor loop and the translation of commands into resolved steps.
#include "Executor.h"

#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/moe.h"
#include "kernels/quantize.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define FM_HAVE_MMAP 1
#endif

namespace fm::rt {

namespace fa = fm::artifact;

// ---------------------------------------------------------------------------
// FloatBlock
// ---------------------------------------------------------------------------

FloatBlock::~FloatBlock() { release(); }

FloatBlock::FloatBlock(FloatBlock &&other) noexcept { *this = std::move(other); }

FloatBlock &FloatBlock::operator=(FloatBlock &&other) noexcept {
  if (this != &other) {
    release();
    data_ = other.data_;
    floats_ = other.floats_;
    bytes_ = other.bytes_;
    mapped_ = other.mapped_;
    other.data_ = nullptr;
    other.floats_ = other.bytes_ = 0;
    other.mapped_ = false;
  }
  return *this;
}

bool FloatBlock::allocate(uint64_t floats) {
  release();
  if (floats == 0)
    return true;
  if (floats > (SIZE_MAX - 64) / sizeof(float))
    return false;
  size_t bytes = (floats * sizeof(float) + 63) & ~size_t(63);
#if FM_HAVE_MMAP
  // Zero pages come from the kernel on first touch: a long cache that a
  // session never fills costs no memory.
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return false;
  mapped_ = true;
#else
  void *p = std::aligned_alloc(64, bytes);
  if (!p)
    return false;
  std::memset(p, 0, bytes);
  mapped_ = false;
#endif
  data_ = static_cast<float *>(p);
  floats_ = floats;
  bytes_ = bytes;
  return true;
}

void FloatBlock::release() {
  if (!data_)
    return;
#if FM_HAVE_MMAP
  if (mapped_)
    munmap(data_, bytes_);
  else
#endif
    std::free(data_);
  data_ = nullptr;
  floats_ = bytes_ = 0;
  mapped_ = false;
}

// ---------------------------------------------------------------------------
// Building the steps
// ---------------------------------------------------------------------------

namespace {

// Weight `index` as the kernels take it (a dtype the loader accepted for
// the command that uses it).
WeightRef weightRef(const Artifact &artifact, uint32_t index) {
  const fa::Weight &w = *artifact.root().weights()->Get(index);
  WeightRef r;
  r.data = artifact.weightData(index);
  if (isQuantized(w.dtype())) {
    r.kind = WeightRef::Kind::Quant;
    r.format = quantFormat(w);
  } else {
    r.kind = w.dtype() == fa::DType::F16 ? WeightRef::Kind::F16
                                         : WeightRef::Kind::F32;
  }
  return r;
}

// The value of a 0-d f32 weight (the loader checked the kind and size).
float scalarWeight(const Artifact &artifact, uint32_t index) {
  float v;
  std::memcpy(&v, artifact.weightData(index), sizeof(v));
  return v;
}

} // namespace

Expected<std::unique_ptr<Executor>>
Executor::create(const Artifact &artifact, const CpuExecutable *executable,
                 int threads, Communicator *comm) {
  std::unique_ptr<Executor> e(new Executor());
  FM_RETURN_IF_ERROR(e->build(artifact, executable, threads, comm));
  return e;
}

Executor::~Executor() = default;

Status Executor::build(const Artifact &artifact,
                       const CpuExecutable *executable, int threads,
                       Communicator *comm) {
  const fa::Artifact &root = artifact.root();
  name_ = artifact.name();
  vocab_ = root.vocab_size();
  auto outOfMemory = [&](const std::string &what, uint64_t floats) {
    return Status::error(name_ + ": cannot allocate " + what + " (" +
                         std::to_string(floats * sizeof(float)) + " bytes)");
  };

  // Which device's commands this rank runs. A partitioned model needs one
  // rank per device: with fewer, some device's partial sums would be
  // missing; with more, they would be counted twice.
  if (comm)
    comm_ = comm;
  const int64_t devices = root.devices(), ranks = comm_->size();
  if (ranks != devices && (devices > 1 || ranks > 1)) {
    if (ranks == 1)
      return Status::error(name_ + " is partitioned for " +
                           std::to_string(devices) +
                           " devices: run it on as many ranks (mpirun -np " +
                           std::to_string(devices) + ")");
    return Status::error(name_ + " is partitioned for " +
                         std::to_string(devices) +
                         (devices == 1 ? " device" : " devices") +
                         " but mpirun started " + std::to_string(ranks) +
                         " ranks");
  }
  device_ = static_cast<int>(comm_->rank() % devices);
  pool_ = std::make_unique<ThreadPool>(threads);

  // KV caches: f32, or int8 (1 byte per element) for an i8 cache.
  const auto *caches = root.caches();
  caches_.resize(caches->size());
  for (flatbuffers::uoffset_t i = 0; i < caches->size(); ++i) {
    const fa::KvCache *c = caches->Get(i);
    Cache &cache = caches_[i];
    cache.partBytes = uint64_t(c->capacity()) * c->kv_heads() * c->head_dim() *
                      dtypeSize(c->dtype());
    cache.bytes = uint64_t(c->slots()) * 2 * cache.partBytes;
    const uint64_t floats = (cache.bytes + sizeof(float) - 1) / sizeof(float);
    if (!cache.block.allocate(floats))
      return outOfMemory("KV cache '" + c->name()->str() + "'", floats);
    capacity_ = std::min<int64_t>(capacity_, c->capacity());
  }
  // Row 0 of a slot's K or V part.
  auto cacheRows = [&](uint32_t cache, uint32_t slot, bool v) -> void * {
    const Cache &c = caches_[cache];
    return reinterpret_cast<uint8_t *>(c.block.data()) +
           (2 * uint64_t(slot) + (v ? 1 : 0)) * c.partBytes;
  };

  // One arena serves every program: programs share nothing through it.
  uint64_t arenaFloats = 0;
  size_t numArgs = 0, numGroups = 0, numMoes = 0, numExperts = 0;
  for (const fa::Program *program : *root.programs()) {
    arenaFloats = std::max<uint64_t>(arenaFloats, program->arena_floats());
    for (const fa::Command *command : *program->commands()) {
      if (const fa::Dispatch *d = command->op_as_Dispatch())
        numArgs += d->args()->size();
      if (const fa::MatMul *m = command->op_as_MatMul())
        numGroups += m->weights()->size();
      if (const fa::Moe *m = command->op_as_Moe()) {
        ++numMoes;
        numExperts += m->gate()->size();
      }
    }
  }
  if (!arena_.allocate(arenaFloats))
    return outOfMemory("the activation arena", arenaFloats);
  // Stable storage: steps point into these.
  args_.assign(numArgs, nullptr);
  groups_.reserve(numGroups);
  moes_.reserve(numMoes);
  moeWeights_.reserve(3 * numExperts);
  quantMoes_.reserve(numMoes);
  quantMoeWeights_.reserve(3 * numExperts);
  size_t nextArg = 0;

  // Per-lane scratch sizes, and how many lanes run at once.
  uint64_t scratchX = 0, scratchY = 0, scratchMoe = 0, scratchReduce = 0;
  int lanes = 1;
  float *arena = arena_.data();
  auto ref = [&](const fa::BufferRef &b) {
    Ref r;
    r.p = arena ? arena + b.offset() : nullptr;
    r.stride = b.stride();
    r.width = b.width();
    return r;
  };

  for (const fa::Program *program : *root.programs()) {
    Program p;
    p.phase = program->phase()->str();
    p.maxRows = program->max_rows();
    p.logitsLastRowOnly = program->logits_last_row_only();
    p.logits = ref(*program->logits()).p;
    p.logitsStride = program->logits()->stride();
    p.steps.reserve(program->commands()->size());
    uint32_t index = 0;
    // Sections follow the artifact's command order: a run of commands of
    // one block (whichever of them this rank drops).
    int32_t lastBlock = -1;
    uint32_t sectionSerial = 0;
    std::vector<uint32_t> stepSerial; // per step: its section's serial
    for (const fa::Command *command : *program->commands()) {
      const uint32_t commandIndex = index++;
      const int32_t block = command->block();
      if (block >= 0 && block != lastBlock)
        ++sectionSerial;
      lastBlock = block;
      if (command->device() >= 0 && command->device() != device_)
        continue; // Another rank's share.
      Step s;
      s.op = static_cast<uint8_t>(command->op_type());
      s.lastRowOnly = command->last_row_only();
      s.command = commandIndex;
      s.track = block >= 0 ? command->track() : -1;
      const int64_t rows = s.lastRowOnly ? 1 : p.maxRows;
      switch (command->op_type()) {
      case fa::Op::Embed: {
        const fa::Embed &op = *command->op_as_Embed();
        s.a = ref(*op.out());
        s.table = weightRef(artifact, op.table_weight());
        p.embeds = true;
        break;
      }
      case fa::Op::MatMul: {
        const fa::MatMul &op = *command->op_as_MatMul();
        s.a = ref(*op.x());
        s.b = ref(*op.y());
        s.k = op.k();
        s.n = op.n();
        s.accumulate = op.accumulate();
        s.group0 = static_cast<uint32_t>(groups_.size());
        const auto *weights = root.weights();
        int64_t col = 0;
        for (flatbuffers::uoffset_t j = 0; j < op.weights()->size(); ++j) {
          const fa::Weight *w = weights->Get(op.weights()->Get(j));
          const WeightRef wr = weightRef(artifact, op.weights()->Get(j));
          int64_t wRows = w->shape()->Get(0);
          // The compiler writes the parts of a fused weight back to back;
          // then the stack (of one dtype and format) is one [n][k] matrix
          // and one call.
          if (j > 0) {
            const fa::Weight *prev = weights->Get(op.weights()->Get(j - 1));
            if (prev->offset() + prev->size() == w->offset() &&
                groups_.back().w.sameLayout(wr)) {
              groups_.back().rows += wRows;
              col += wRows;
              continue;
            }
          }
          WeightGroup g;
          g.w = wr;
          g.rows = wRows;
          g.col0 = col;
          groups_.push_back(g);
          col += wRows;
        }
        s.groups = static_cast<uint32_t>(groups_.size()) - s.group0;
        if (rows > 1 && s.a.stride != s.k)
          scratchX = std::max<uint64_t>(scratchX, uint64_t(rows) * s.k);
        for (uint32_t g = s.group0; g < s.group0 + s.groups; ++g)
          if (rows > 1 && s.b.stride != groups_[g].rows)
            scratchY = std::max<uint64_t>(scratchY, uint64_t(rows) * groups_[g].rows);
        break;
      }
      case fa::Op::Attention: {
        const fa::Attention &op = *command->op_as_Attention();
        s.a = ref(*op.q());
        s.b = ref(*op.out());
        s.kCache = cacheRows(op.cache(), op.slot(), false);
        s.vCache = cacheRows(op.cache(), op.slot(), true);
        s.capacity = caches->Get(op.cache())->capacity();
        if (caches->Get(op.cache())->dtype() == fa::DType::I8) {
          s.int8 = true;
          s.kScale = scalarWeight(artifact, uint32_t(op.k_scale()));
          s.vScale = scalarWeight(artifact, uint32_t(op.v_scale()));
        }
        s.heads = op.heads();
        s.kvHeads = op.kv_heads();
        s.headDim = op.head_dim();
        s.scale = op.scale();
        s.window = op.window();
        break;
      }
      case fa::Op::Dispatch: {
        const fa::Dispatch &op = *command->op_as_Dispatch();
        p.dispatches = true;
        s.fn = executable ? executable->function(op.function()) : nullptr;
        s.args = args_.data() + nextArg;
        for (const fa::Arg *arg : *op.args()) {
          void *ptr = nullptr;
          switch (arg->kind()) {
          case fa::ArgKind::Buffer:
            ptr = ref(*arg->buffer()).p;
            break;
          case fa::ArgKind::Weight:
            ptr = const_cast<uint8_t *>(artifact.weightData(arg->index()));
            break;
          case fa::ArgKind::CacheK:
            ptr = cacheRows(arg->index(), arg->slot(), false);
            break;
          case fa::ArgKind::CacheV:
            ptr = cacheRows(arg->index(), arg->slot(), true);
            break;
          }
          args_[nextArg++] = ptr;
        }
        break;
      }
      case fa::Op::CopyLastRow: {
        const fa::CopyLastRow &op = *command->op_as_CopyLastRow();
        s.a = ref(*op.src());
        s.b = ref(*op.dst());
        break;
      }
      case fa::Op::Moe: {
        const fa::Moe &op = *command->op_as_Moe();
        const auto *weights = root.weights();
        s.a = ref(*op.x());
        s.b = ref(*op.y());
        kernels::MoeShape shape;
        shape.hidden = op.x()->width();
        shape.experts = op.gate()->size();
        shape.intermediate = weights->Get(op.gate()->Get(0))->shape()->Get(0);
        shape.topK = op.top_k();
        if (op.shared_gate() >= 0)
          shape.sharedIntermediate =
              weights->Get(op.shared_gate())->shape()->Get(0);
        kernels::MoeShape planned = shape;
        planned.rows = rows;
        const size_t E = op.gate()->size();
        if (moeHasQuantizedWeights(root, op)) {
          // Packed experts: the runtime's Moe over per-weight kinds.
          QuantMoeArgs m;
          m.shape = shape;
          m.normTopk = op.norm_topk();
          m.accumulate = op.accumulate();
          m.router = weightRef(artifact, op.router());
          const size_t first = quantMoeWeights_.size();
          for (const auto *list : {op.gate(), op.up(), op.down()})
            for (uint32_t w : *list)
              quantMoeWeights_.push_back(weightRef(artifact, w));
          m.gate = quantMoeWeights_.data() + first;
          m.up = m.gate + E;
          m.down = m.up + E;
          if (op.shared_gate() >= 0) {
            m.sharedGate = weightRef(artifact, op.shared_gate());
            m.sharedUp = weightRef(artifact, op.shared_up());
            m.sharedDown = weightRef(artifact, op.shared_down());
            m.sharedExpertGate = weightRef(artifact, op.shared_expert_gate());
          }
          scratchMoe = std::max<uint64_t>(scratchMoe,
                                          quantMoeScratchFloats(planned));
          s.quantMoe = true;
          s.moe = static_cast<uint32_t>(quantMoes_.size());
          quantMoes_.push_back(m);
          break;
        }
        kernels::MoeArgs m;
        m.shape = shape;
        m.normTopk = op.norm_topk();
        m.accumulate = op.accumulate();
        m.f16 = weights->Get(op.router())->dtype() == fa::DType::F16;
        m.router = artifact.weightData(op.router());
        const size_t first = moeWeights_.size();
        for (const auto *list : {op.gate(), op.up(), op.down()})
          for (uint32_t w : *list)
            moeWeights_.push_back(artifact.weightData(w));
        m.gate = moeWeights_.data() + first;
        m.up = m.gate + E;
        m.down = m.up + E;
        if (op.shared_gate() >= 0) {
          m.sharedGate = artifact.weightData(op.shared_gate());
          m.sharedUp = artifact.weightData(op.shared_up());
          m.sharedDown = artifact.weightData(op.shared_down());
          m.sharedExpertGate = artifact.weightData(op.shared_expert_gate());
        }
        scratchMoe = std::max<uint64_t>(scratchMoe,
                                        kernels::moeScratchFloats(planned));
        s.moe = static_cast<uint32_t>(moes_.size());
        moes_.push_back(m);
        break;
      }
      case fa::Op::AllReduce: {
        const fa::AllReduce &op = *command->op_as_AllReduce();
        s.a = ref(*op.buffer());
        s.scale = op.scale();
        if (rows > 1 && s.a.stride != s.a.width)
          scratchReduce =
              std::max<uint64_t>(scratchReduce, uint64_t(rows) * s.a.width);
        break;
      }
      case fa::Op::NONE:
        break; // Rejected by the loader.
      }
      p.steps.push_back(s);
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

  // A lane per track that may run at once (one, on one thread).
  if (pool_->numThreads() == 1)
    lanes = 1;
  lanes_.resize(lanes);
  for (Lane &lane : lanes_) {
    if (!lane.x.allocate(scratchX) || !lane.y.allocate(scratchY))
      return outOfMemory("matmul scratch", std::max(scratchX, scratchY));
    if (!lane.moe.allocate(scratchMoe))
      return outOfMemory("moe scratch", scratchMoe);
  }
  if (!reduceScratch_.allocate(scratchReduce))
    return outOfMemory("all-reduce scratch", scratchReduce);
  return Status::ok();
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

int Executor::findProgram(const std::string &phase) const {
  for (size_t i = 0; i < programs_.size(); ++i)
    if (programs_[i].phase == phase)
      return static_cast<int>(i);
  return -1;
}

Status Executor::run(int program, const int32_t *tokens, int64_t rows,
                     int64_t pos) {
  if (program < 0 || program >= numPrograms())
    return Status::error(name_ + ": no program " + std::to_string(program));
  const Program &p = programs_[program];
  const std::string where = name_ + ": program '" + p.phase + "': ";
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
  if (p.dispatches)
    for (const Step &s : p.steps)
      if (s.op == static_cast<uint8_t>(fa::Op::Dispatch) && !s.fn)
        return Status::error(where + "command " + std::to_string(s.command) +
                             " calls generated code, which was not loaded "
                             "(LoadOptions::loadExecutable)");

  ThreadPool *pool = pool_.get();
  const bool concurrentTracks = pool->numThreads() > 1;
  for (size_t i = 0; i < p.steps.size();) {
    const Step &first = p.steps[i];
    if (first.section >= 0 && concurrentTracks) {
      const Section &sec = p.sections[first.section];
      i = sec.end;
      if (sec.numTracks() > 1) {
        // Each track's steps in order, tracks concurrently; the kernels of
        // a track run single-threaded on the track's lane. Steps inside a
        // section cannot fail (AllReduce is never in one).
        pool->parallelFor(sec.numTracks(), [&](int64_t begin, int64_t end) {
          for (int64_t t = begin; t < end; ++t)
            for (uint32_t j = sec.trackBegin[t]; j < sec.trackBegin[t + 1]; ++j)
              (void)runStep(p.steps[sec.order[j]], tokens, rows, pos, nullptr,
                            lanes_[t]);
        });
        continue;
      }
      for (uint32_t j = sec.begin; j < sec.end; ++j)
        FM_RETURN_IF_ERROR(runStep(p.steps[j], tokens, rows, pos, pool, lanes_[0]));
      continue;
    }
    FM_RETURN_IF_ERROR(runStep(first, tokens, rows, pos, pool, lanes_[0]));
    ++i;
  }
  return Status::ok();
}

Status Executor::runStep(const Step &s, const int32_t *tokens, int64_t rows,
                         int64_t pos, ThreadPool *pool, Lane &lane) {
  // A last_row_only command sees a 1-row chunk at the chunk's last
  // position; its buffers hold that one row.
  const int64_t M = s.lastRowOnly ? 1 : rows;
  const int64_t at = s.lastRowOnly ? pos + rows - 1 : pos;
  switch (static_cast<fa::Op>(s.op)) {
  case fa::Op::Embed: {
    const int32_t *ids = s.lastRowOnly ? tokens + rows - 1 : tokens;
    const int64_t width = s.a.width;
    const size_t rowBytes = s.table.rowBytes(width);
    for (int64_t r = 0; r < M && width > 0; ++r) {
      float *out = s.a.p + r * s.a.stride;
      const uint8_t *row =
          static_cast<const uint8_t *>(s.table.data) + size_t(ids[r]) * rowBytes;
      switch (s.table.kind) {
      case WeightRef::Kind::F32:
        std::memcpy(out, row, width * sizeof(float));
        break;
      case WeightRef::Kind::F16:
        for (int64_t c = 0; c < width; ++c) {
          uint16_t h;
          std::memcpy(&h, row + 2 * c, sizeof(h));
          out[c] = kernels::halfToFloat(h);
        }
        break;
      case WeightRef::Kind::Quant:
        // Only the looked-up rows are unpacked.
        kernels::dequantizeRow(row, s.table.format, width, out);
        break;
      }
    }
    break;
  }
  case fa::Op::MatMul:
    matmul(s, M, pool, lane);
    break;
  case fa::Op::Attention:
    attention(s, M, at, pool);
    break;
  case fa::Op::Dispatch:
    s.fn(s.args, M, at);
    break;
  case fa::Op::CopyLastRow:
    if (s.a.width > 0)
      std::memmove(s.b.p, s.a.p + (M - 1) * s.a.stride,
                   s.a.width * sizeof(float));
    break;
  case fa::Op::Moe:
    moe(s, M, pool, lane);
    break;
  case fa::Op::AllReduce:
    return allReduce(s, M);
  case fa::Op::NONE:
    break;
  }
  return Status::ok();
}

void Executor::matmul(const Step &s, int64_t M, ThreadPool *pool, Lane &lane) {
  // The kernel takes dense rows: gather a strided x first.
  const float *x = s.a.p;
  if (M > 1 && s.a.stride != s.k) {
    float *dense = lane.x.data();
    for (int64_t r = 0; r < M; ++r)
      std::memcpy(dense + r * s.k, s.a.p + r * s.a.stride, s.k * sizeof(float));
    x = dense;
  }
  for (uint32_t gi = s.group0; gi < s.group0 + s.groups; ++gi) {
    const WeightGroup &g = groups_[gi];
    auto call = [&](float *y, bool accumulate) {
      linear(g.w, x, M, s.k, g.rows, y, accumulate, pool);
    };
    float *y = s.b.p + g.col0;
    if (M == 1 || s.b.stride == g.rows) {
      call(y, s.accumulate);
      continue;
    }
    // y's rows are wider than this group's columns: go through dense
    // scratch (bringing y's values in when accumulating).
    float *dense = lane.y.data();
    const size_t bytes = g.rows * sizeof(float);
    if (s.accumulate)
      for (int64_t r = 0; r < M; ++r)
        std::memcpy(dense + r * g.rows, y + r * s.b.stride, bytes);
    call(dense, s.accumulate);
    for (int64_t r = 0; r < M; ++r)
      std::memcpy(y + r * s.b.stride, dense + r * g.rows, bytes);
  }
}

void Executor::attention(const Step &s, int64_t S, int64_t pos0,
                         ThreadPool *pool) {
  kernels::AttentionArgs a;
  a.H = s.heads;
  a.KVH = s.kvHeads;
  a.D = s.headDim;
  a.scale = s.scale;
  a.window = s.window;
  a.k = s.kCache;
  a.v = s.vCache;
  a.capacity = s.capacity;
  a.int8 = s.int8;
  a.kScale = s.kScale;
  a.vScale = s.vScale;
  const int64_t width = s.heads * s.headDim;
  if (S == 1 || (s.a.stride == width && s.b.stride == width)) {
    a.q = s.a.p;
    a.out = s.b.p;
    a.S = S;
    a.pos0 = pos0;
    kernels::attention(a, pool);
    return;
  }
  // The kernel takes dense rows: one call per strided row.
  for (int64_t r = 0; r < S; ++r) {
    a.q = s.a.p + r * s.a.stride;
    a.out = s.b.p + r * s.b.stride;
    a.S = 1;
    a.pos0 = pos0 + r;
    kernels::attention(a, pool);
  }
}

void Executor::moe(const Step &s, int64_t M, ThreadPool *pool, Lane &lane) {
  if (s.quantMoe) {
    QuantMoeArgs a = quantMoes_[s.moe];
    a.shape.rows = M;
    a.x = s.a.p;
    a.xStride = s.a.stride;
    a.y = s.b.p;
    a.yStride = s.b.stride;
    quantMoe(a, lane.moe.data(), pool);
    return;
  }
  kernels::MoeArgs a = moes_[s.moe];
  a.shape.rows = M;
  a.x = s.a.p;
  a.xStride = s.a.stride;
  a.y = s.b.p;
  a.yStride = s.b.stride;
  kernels::moe(a, lane.moe.data(), pool);
}

Status Executor::allReduce(const Step &s, int64_t M) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t width = s.a.width;
  if (width > 0) {
    const bool dense = M == 1 || s.a.stride == width;
    float *data = s.a.p;
    if (comm_->size() > 1) {
      // One collective per call: a strided buffer is packed first.
      if (!dense) {
        data = reduceScratch_.data();
        for (int64_t r = 0; r < M; ++r)
          std::memcpy(data + r * width, s.a.p + r * s.a.stride,
                      width * sizeof(float));
      }
      FM_RETURN_IF_ERROR(comm_->allReduceSum(data, M * width));
      if (!dense)
        for (int64_t r = 0; r < M; ++r)
          std::memcpy(s.a.p + r * s.a.stride, data + r * width,
                      width * sizeof(float));
    }
    if (s.scale != 1.0f)
      for (int64_t r = 0; r < M; ++r) {
        float *row = s.a.p + r * s.a.stride;
        for (int64_t c = 0; c < width; ++c)
          row[c] *= s.scale;
      }
  }
  collectives_.allReduces += 1;
  collectives_.ms += std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - t0)
                         .count();
  return Status::ok();
}

} // namespace fm::rt
