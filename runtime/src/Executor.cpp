// The executor loop and the translation of commands into resolved steps.
#include "Executor.h"

#include "kernels/attention.h"
#include "kernels/matmul.h"

#include <algorithm>
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

Expected<std::unique_ptr<Executor>>
Executor::create(const Artifact &artifact, const CpuExecutable *executable,
                 int threads) {
  std::unique_ptr<Executor> e(new Executor());
  FM_RETURN_IF_ERROR(e->build(artifact, executable, threads));
  return e;
}

Executor::~Executor() = default;

Status Executor::build(const Artifact &artifact,
                       const CpuExecutable *executable, int threads) {
  const fa::Artifact &root = artifact.root();
  name_ = artifact.name();
  vocab_ = root.vocab_size();
  auto outOfMemory = [&](const std::string &what, uint64_t floats) {
    return Status::error(name_ + ": cannot allocate " + what + " (" +
                         std::to_string(floats * sizeof(float)) + " bytes)");
  };

  // KV caches.
  const auto *caches = root.caches();
  caches_.resize(caches->size());
  for (flatbuffers::uoffset_t i = 0; i < caches->size(); ++i) {
    const fa::KvCache *c = caches->Get(i);
    uint64_t floats = uint64_t(c->slots()) * 2 * c->capacity() *
                      c->kv_heads() * c->head_dim();
    if (!caches_[i].allocate(floats))
      return outOfMemory("KV cache '" + c->name()->str() + "'", floats);
    capacity_ = std::min<int64_t>(capacity_, c->capacity());
  }
  auto cacheK = [&](uint32_t cache, uint32_t slot) {
    const fa::KvCache *c = caches->Get(cache);
    uint64_t part = uint64_t(c->capacity()) * c->kv_heads() * c->head_dim();
    return caches_[cache].data() + 2 * uint64_t(slot) * part;
  };
  auto cacheV = [&](uint32_t cache, uint32_t slot) {
    const fa::KvCache *c = caches->Get(cache);
    uint64_t part = uint64_t(c->capacity()) * c->kv_heads() * c->head_dim();
    return caches_[cache].data() + (2 * uint64_t(slot) + 1) * part;
  };

  // One arena serves every program: programs share nothing through it.
  uint64_t arenaFloats = 0;
  size_t numArgs = 0, numGroups = 0;
  for (const fa::Program *program : *root.programs()) {
    arenaFloats = std::max<uint64_t>(arenaFloats, program->arena_floats());
    for (const fa::Command *command : *program->commands()) {
      if (const fa::Dispatch *d = command->op_as_Dispatch())
        numArgs += d->args()->size();
      if (const fa::MatMul *m = command->op_as_MatMul())
        numGroups += m->weights()->size();
    }
  }
  if (!arena_.allocate(arenaFloats))
    return outOfMemory("the activation arena", arenaFloats);
  // Stable storage: steps point into these.
  args_.assign(numArgs, nullptr);
  groups_.reserve(numGroups);
  size_t nextArg = 0;

  uint64_t scratchX = 0, scratchY = 0;
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
    for (const fa::Command *command : *program->commands()) {
      Step s;
      s.op = static_cast<uint8_t>(command->op_type());
      s.lastRowOnly = command->last_row_only();
      s.command = index++;
      const int64_t rows = s.lastRowOnly ? 1 : p.maxRows;
      switch (command->op_type()) {
      case fa::Op::Embed: {
        const fa::Embed &op = *command->op_as_Embed();
        s.a = ref(*op.out());
        s.table = artifact.weightData(op.table_weight());
        s.f16 = root.weights()->Get(op.table_weight())->dtype() == fa::DType::F16;
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
          s.f16 = w->dtype() == fa::DType::F16;
          int64_t wRows = w->shape()->Get(0);
          // The compiler writes the parts of a fused weight back to back;
          // then the stack is one [n][k] matrix and one call.
          if (j > 0) {
            const fa::Weight *prev = weights->Get(op.weights()->Get(j - 1));
            if (prev->offset() + prev->size() == w->offset()) {
              groups_.back().rows += wRows;
              col += wRows;
              continue;
            }
          }
          WeightGroup g;
          g.w = artifact.weightData(op.weights()->Get(j));
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
        s.kCache = cacheK(op.cache(), op.slot());
        s.vCache = cacheV(op.cache(), op.slot());
        s.capacity = caches->Get(op.cache())->capacity();
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
            ptr = cacheK(arg->index(), arg->slot());
            break;
          case fa::ArgKind::CacheV:
            ptr = cacheV(arg->index(), arg->slot());
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
      case fa::Op::NONE:
        break; // Rejected by the loader.
      }
      p.steps.push_back(s);
    }
    programs_.push_back(std::move(p));
  }
  if (!scratchX_.allocate(scratchX))
    return outOfMemory("matmul scratch", scratchX);
  if (!scratchY_.allocate(scratchY))
    return outOfMemory("matmul scratch", scratchY);
  pool_ = std::make_unique<ThreadPool>(threads);
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

  for (const Step &s : p.steps) {
    // A last_row_only command sees a 1-row chunk at the chunk's last
    // position; its buffers hold that one row.
    const int64_t M = s.lastRowOnly ? 1 : rows;
    const int64_t at = s.lastRowOnly ? pos + rows - 1 : pos;
    switch (static_cast<fa::Op>(s.op)) {
    case fa::Op::Embed: {
      const int32_t *ids = s.lastRowOnly ? tokens + rows - 1 : tokens;
      const int64_t width = s.a.width;
      for (int64_t r = 0; r < M && width > 0; ++r) {
        float *out = s.a.p + r * s.a.stride;
        if (s.f16) {
          const uint16_t *row = static_cast<const uint16_t *>(s.table) +
                                int64_t(ids[r]) * width;
          for (int64_t c = 0; c < width; ++c)
            out[c] = kernels::halfToFloat(row[c]);
        } else {
          std::memcpy(out,
                      static_cast<const float *>(s.table) + int64_t(ids[r]) * width,
                      width * sizeof(float));
        }
      }
      break;
    }
    case fa::Op::MatMul:
      matmul(s, M);
      break;
    case fa::Op::Attention:
      attention(s, M, at);
      break;
    case fa::Op::Dispatch:
      s.fn(s.args, M, at);
      break;
    case fa::Op::CopyLastRow:
      if (s.a.width > 0)
        std::memmove(s.b.p, s.a.p + (M - 1) * s.a.stride,
                     s.a.width * sizeof(float));
      break;
    case fa::Op::NONE:
      break;
    }
  }
  return Status::ok();
}

void Executor::matmul(const Step &s, int64_t M) {
  ThreadPool *pool = pool_.get();
  // The kernel takes dense rows: gather a strided x first.
  const float *x = s.a.p;
  if (M > 1 && s.a.stride != s.k) {
    float *dense = scratchX_.data();
    for (int64_t r = 0; r < M; ++r)
      std::memcpy(dense + r * s.k, s.a.p + r * s.a.stride, s.k * sizeof(float));
    x = dense;
  }
  for (uint32_t gi = s.group0; gi < s.group0 + s.groups; ++gi) {
    const WeightGroup &g = groups_[gi];
    auto call = [&](float *y, bool accumulate) {
      if (s.f16)
        kernels::matmulF16W(x, M, s.k, static_cast<const uint16_t *>(g.w),
                            g.rows, y, accumulate, pool);
      else
        kernels::matmulF32(x, M, s.k, static_cast<const float *>(g.w), g.rows,
                           y, accumulate, pool);
    };
    float *y = s.b.p + g.col0;
    if (M == 1 || s.b.stride == g.rows) {
      call(y, s.accumulate);
      continue;
    }
    // y's rows are wider than this group's columns: go through dense
    // scratch (bringing y's values in when accumulating).
    float *dense = scratchY_.data();
    const size_t bytes = g.rows * sizeof(float);
    if (s.accumulate)
      for (int64_t r = 0; r < M; ++r)
        std::memcpy(dense + r * g.rows, y + r * s.b.stride, bytes);
    call(dense, s.accumulate);
    for (int64_t r = 0; r < M; ++r)
      std::memcpy(y + r * s.b.stride, dense + r * g.rows, bytes);
  }
}

void Executor::attention(const Step &s, int64_t S, int64_t pos0) {
  kernels::AttentionArgs a;
  a.H = s.heads;
  a.KVH = s.kvHeads;
  a.D = s.headDim;
  a.scale = s.scale;
  a.window = s.window;
  a.k = s.kCache;
  a.v = s.vCache;
  a.capacity = s.capacity;
  const int64_t width = s.heads * s.headDim;
  if (S == 1 || (s.a.stride == width && s.b.stride == width)) {
    a.q = s.a.p;
    a.out = s.b.p;
    a.S = S;
    a.pos0 = pos0;
    kernels::attention(a, pool_.get());
    return;
  }
  // The kernel takes dense rows: one call per strided row.
  for (int64_t r = 0; r < S; ++r) {
    a.q = s.a.p + r * s.a.stride;
    a.out = s.b.p + r * s.b.stride;
    a.S = 1;
    a.pos0 = pos0 + r;
    kernels::attention(a, pool_.get());
  }
}

} // namespace fm::rt
