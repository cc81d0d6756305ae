// fm::Model and fm::Session: the public API over the loader and executor.
#include "fm/runtime.h"

#include "Executor.h"
#include "fm/artifact.h"
#include "fm/sampler.h"
#include "hal/Registry.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <initializer_list>

namespace fm {

namespace fa = fm::artifact;

// ---------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------

struct Model::Impl {
  std::unique_ptr<ArtifactFile> artifact;
  std::unique_ptr<hal::Device> device;
  std::unique_ptr<hal::Buffer> weights;
  std::unique_ptr<hal::Executable> executable;
  rt::LoadedModel loaded;
  std::string family, modelName, configJson, deviceName, deviceDescription;
  std::string exeFormat, exeTriple;
  std::vector<std::string> targets;
  int64_t vocab = 0, hidden = 0, layers = 0, parameters = 0;
  int64_t weightBytes = 0, kvBytesPerToken = 0, contextLength = 0;
  double bitsPerWeight = 0.0;
  int64_t ranks = 1, numTracks = 0, numTrackBlocks = 0;
  std::vector<ProgramInfo> programs;
  std::vector<CacheInfo> caches;
};

namespace {

std::string str(const flatbuffers::String *s) { return s ? s->str() : std::string(); }

std::string join(const std::vector<std::string> &items) {
  std::string s;
  for (const std::string &i : items)
    s += (s.empty() ? "" : ", ") + i;
  return s.empty() ? "none" : s;
}

// The device to run `a` on: the one asked for, or the best present hardware
// device for which the artifact has code (the CPU when there is no GPU).
Expected<std::unique_ptr<hal::Device>> chooseDevice(const ArtifactFile &a,
                                                    const std::string &asked) {
  auto runnable = [&](const std::string &target) {
    return !a.hasDispatch() || a.executable(target) != nullptr;
  };
  if (!asked.empty()) {
    auto device = hal::openDevice(asked);
    if (!device)
      return Status::error(a.name() + ": " + device.message());
    if (!runnable((*device)->target()))
      return Status::error(a.name() + " has no executable for device '" +
                           asked + "' (it has: " + join(a.targets()) +
                           "); compile it with fmc compile --target " +
                           (*device)->target());
    return device;
  }
  for (const hal::DeviceInfo &info : hal::probeDevices()) {
    if (!info.present || !info.hardware)
      continue;
    auto device = hal::openDevice(info.name);
    if (device && runnable((*device)->target()))
      return device;
  }
  return Status::error(a.name() + ": no device here can run it (its "
                       "executables are for: " +
                       join(a.targets()) + ")");
}

Expected<std::shared_ptr<Model>>
finishLoad(Expected<std::unique_ptr<ArtifactFile>> artifact,
           const LoadOptions &options,
           std::shared_ptr<Model> (*make)(std::unique_ptr<Model::Impl>)) {
  if (!artifact)
    return artifact.status();
  auto impl = std::make_unique<Model::Impl>();
  impl->artifact = std::move(*artifact);
  const ArtifactFile &a = *impl->artifact;
  const fa::Artifact &root = a.root();
  if (options.skipProgramDigestForFuzzing && options.loadExecutable &&
      a.hasDispatch())
    return Status::error(a.name() + ": refusing to load generated code whose "
                                    "program digest was not checked");
  auto device = chooseDevice(a, options.device);
  if (!device)
    return device.status();
  impl->device = std::move(*device);
  impl->deviceName = impl->device->name();
  impl->deviceDescription = impl->device->description();
  auto weights = impl->device->importWeights(a.data(), a.dataSize());
  if (!weights)
    return Status::error(a.name() + ": weights: " + weights.message());
  impl->weights = std::move(*weights);
  const fa::Executable *exe = a.executable(impl->device->target());
  if (exe) {
    impl->exeFormat = str(exe->format());
    impl->exeTriple = str(exe->triple());
  }
  if (a.hasDispatch() && options.loadExecutable) {
    auto loaded = impl->device->loadExecutable(*exe, a.name());
    if (!loaded)
      return loaded.status();
    impl->executable = std::move(*loaded);
  }
  impl->loaded.artifact = impl->artifact.get();
  impl->loaded.device = impl->device.get();
  impl->loaded.weights = impl->weights.get();
  impl->loaded.executable = impl->executable.get();
  impl->targets = a.targets();
  impl->family = str(root.family());
  impl->modelName = str(root.model_name());
  impl->configJson = str(root.config_json());
  impl->vocab = root.vocab_size();
  impl->hidden = root.hidden_size();
  impl->layers = root.num_layers();
  impl->parameters = static_cast<int64_t>(root.parameters());
  impl->ranks = root.ranks();
  impl->numTracks = root.num_tracks();
  impl->numTrackBlocks = root.num_track_blocks();
  // Bits per weight of the packed projections: the packed weights but the
  // embedding tables (a tied LM head is its table), as `fmc inspect` counts.
  std::vector<bool> table(root.weights()->size(), false);
  for (const fa::Program *p : *root.programs())
    for (const fa::Command *c : *p->commands())
      if (const fa::Embed *e = c->op_as_Embed())
        table[e->table_weight()] = true;
  double quantBytes = 0.0, quantElements = 0.0;
  for (flatbuffers::uoffset_t i = 0; i < root.weights()->size(); ++i) {
    const fa::Weight *w = root.weights()->Get(i);
    impl->weightBytes += static_cast<int64_t>(w->size());
    if (isQuantized(w->dtype()) && !table[i]) { // 2-D (the loader checked)
      quantBytes += static_cast<double>(w->size());
      quantElements += static_cast<double>(w->shape()->Get(0)) *
                       static_cast<double>(w->shape()->Get(1));
    }
  }
  impl->bitsPerWeight = quantElements > 0 ? quantBytes * 8.0 / quantElements : 0.0;
  for (const fa::KvCache *c : *root.caches()) {
    CacheInfo info;
    info.name = str(c->name());
    info.slots = c->slots();
    info.kvHeads = c->kv_heads();
    info.headDim = c->head_dim();
    info.capacity = c->capacity();
    info.dtype = dtypeName(c->dtype());
    info.elementBytes = static_cast<int64_t>(dtypeSize(c->dtype()));
    impl->kvBytesPerToken += static_cast<int64_t>(
        int64_t(2) * info.slots * info.kvHeads * info.headDim *
        info.elementBytes);
    impl->contextLength = impl->caches.empty()
                              ? info.capacity
                              : std::min(impl->contextLength, info.capacity);
    impl->caches.push_back(std::move(info));
  }
  for (const fa::Program *p : *root.programs()) {
    ProgramInfo info;
    info.phase = str(p->phase());
    info.maxRows = p->max_rows();
    info.arenaFloats = static_cast<int64_t>(p->arena_bytes() / sizeof(float));
    info.commands = p->commands()->size();
    info.logitsLastRowOnly = p->logits_last_row_only();
    for (const fa::Command *c : *p->commands())
      info.collectives += c->op_type() == fa::Op::AllReduce;
    impl->programs.push_back(std::move(info));
  }
  return make(std::move(impl));
}

ArtifactFile::Options fileOptions(const LoadOptions &options) {
  ArtifactFile::Options o;
  o.checkWeightsDigest = options.verifyHash;
  o.checkProgramDigest = !options.skipProgramDigestForFuzzing;
  return o;
}

} // namespace

std::vector<DeviceInfo> probeDevices() { return hal::probeDevices(); }

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

Expected<std::shared_ptr<Model>> Model::load(const std::string &path,
                                             const LoadOptions &options) {
  return finishLoad(ArtifactFile::open(path, fileOptions(options)), options,
                    [](std::unique_ptr<Impl> impl) {
                      return std::shared_ptr<Model>(new Model(std::move(impl)));
                    });
}

Expected<std::shared_ptr<Model>>
Model::loadFromBuffer(const uint8_t *data, size_t size, const std::string &name,
                      const LoadOptions &options) {
  return finishLoad(ArtifactFile::fromBuffer(data, size, name,
                                            fileOptions(options)),
                    options,
                    [](std::unique_ptr<Impl> impl) {
                      return std::shared_ptr<Model>(new Model(std::move(impl)));
                    });
}

const std::string &Model::name() const { return impl_->artifact->name(); }
const std::string &Model::family() const { return impl_->family; }
const std::string &Model::modelName() const { return impl_->modelName; }
const std::string &Model::configJson() const { return impl_->configJson; }
const std::string &Model::device() const { return impl_->deviceName; }
const std::string &Model::deviceDescription() const {
  return impl_->deviceDescription;
}
const std::vector<std::string> &Model::targets() const { return impl_->targets; }
int64_t Model::vocabSize() const { return impl_->vocab; }
int64_t Model::hiddenSize() const { return impl_->hidden; }
int64_t Model::numLayers() const { return impl_->layers; }
int64_t Model::parameters() const { return impl_->parameters; }
int64_t Model::weightBytes() const { return impl_->weightBytes; }
double Model::bitsPerWeight() const { return impl_->bitsPerWeight; }
int64_t Model::kvBytesPerToken() const { return impl_->kvBytesPerToken; }
int64_t Model::contextLength() const { return impl_->contextLength; }
const std::vector<ProgramInfo> &Model::programs() const { return impl_->programs; }
const std::vector<CacheInfo> &Model::caches() const { return impl_->caches; }
const std::string &Model::executableFormat() const { return impl_->exeFormat; }
const std::string &Model::executableTriple() const { return impl_->exeTriple; }
bool Model::executableLoaded() const { return impl_->executable != nullptr; }
int64_t Model::ranks() const { return impl_->ranks; }
int64_t Model::numTracks() const { return impl_->numTracks; }
int64_t Model::numTrackBlocks() const { return impl_->numTrackBlocks; }

const ProgramInfo *Model::program(const std::string &phase) const {
  for (const ProgramInfo &p : impl_->programs)
    if (p.phase == phase)
      return &p;
  return nullptr;
}

// ---------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------

struct Session::Impl {
  std::shared_ptr<Model> model;
  Status status;
  std::unique_ptr<rt::Executor> exec;
  int64_t position = 0;
  std::vector<float> allLogits;
  int64_t decodeTokens = 0, decodeCollectives = 0;

  std::string prefix() const { return model->name() + ": "; }

  /// The first program of `phases` the model has, or -1.
  int pick(std::initializer_list<const char *> phases) const {
    for (const char *phase : phases)
      if (int p = exec->findProgram(phase); p >= 0)
        return p;
    return -1;
  }

  Status checkTokens(const int32_t *tokens, int64_t n) const {
    const int64_t vocab = model->vocabSize();
    for (int64_t i = 0; i < n; ++i)
      if (tokens[i] < 0 || tokens[i] >= vocab)
        return Status::error(prefix() + "token " + std::to_string(tokens[i]) +
                             (n > 1 ? " at index " + std::to_string(i) : "") +
                             " is out of range (vocab " +
                             std::to_string(vocab) + ")");
    return Status::ok();
  }

  Status checkRoom(int64_t n) const {
    const int64_t capacity = exec->capacity();
    if (n > capacity - position)
      return Status::error(prefix() + std::to_string(n) +
                           (n == 1 ? " token" : " tokens") + " at position " +
                           std::to_string(position) +
                           " do not fit in the context of " +
                           std::to_string(capacity) + " tokens");
    return Status::ok();
  }
};

Session::Session(std::shared_ptr<Model> model, const SessionOptions &options)
    : impl_(std::make_unique<Impl>()) {
  impl_->model = std::move(model);
  if (!impl_->model) {
    impl_->status = Status::error("fm::Session: no model");
    return;
  }
  rt::ExecutorOptions eo;
  eo.threads = options.threads;
  eo.comm = options.communicator;
  switch (options.activations) {
  case SessionOptions::Activations::Int8x2:
    eo.activations = kernels::QActivations::Int8x2;
    break;
  case SessionOptions::Activations::Int8:
    eo.activations = kernels::QActivations::Int8;
    break;
  case SessionOptions::Activations::F32:
    eo.activations = kernels::QActivations::F32;
    break;
  }
  const Model::Impl &m = impl_->model->impl();
  // Allocation and thread creation may throw; the API must not.
  try {
    auto exec = rt::Executor::create(m.loaded, eo);
    if (!exec)
      impl_->status = exec.status();
    else
      impl_->exec = std::move(*exec);
  } catch (const std::exception &e) {
    impl_->status = Status::error(impl_->prefix() +
                                  "cannot create a session: " + e.what());
  }
}

Session::~Session() = default;

const Status &Session::status() const { return impl_->status; }
const Model &Session::model() const { return *impl_->model; }
int Session::threads() const { return impl_->exec ? impl_->exec->threads() : 0; }
int64_t Session::position() const { return impl_->position; }

Status Session::reset() {
  if (!impl_->status)
    return impl_->status;
  impl_->position = 0;
  return Status::ok();
}

Expected<Logits> Session::prefill(const int32_t *tokens, int64_t n,
                                  bool allLogits, int64_t chunk) {
  Impl &s = *impl_;
  if (!s.status)
    return s.status;
  if (n < 1 || !tokens)
    return Status::error(s.prefix() + "prefill needs at least one token");
  if (chunk < 0)
    return Status::error(s.prefix() + "prefill chunk " + std::to_string(chunk) +
                         " is negative");
  FM_RETURN_IF_ERROR(s.checkTokens(tokens, n));
  FM_RETURN_IF_ERROR(s.checkRoom(n));

  int program;
  if (chunk == 1)
    program = allLogits ? s.pick({"decode", "prefill", "prefill_last"})
                        : s.pick({"decode", "prefill_last", "prefill"});
  else
    program = allLogits ? s.pick({"prefill", "decode", "prefill_last"})
                        : s.pick({"prefill_last", "prefill", "decode"});
  if (program < 0)
    return Status::error(s.prefix() +
                         "the model has no 'prefill' or 'decode' program");
  rt::Executor &e = *s.exec;
  const bool lastOnly = e.logitsLastRowOnly(program);
  int64_t rowsPerCall = chunk == 0 ? e.maxRows(program)
                                   : std::min(chunk, e.maxRows(program));
  // A program that keeps only the last row's logits gives every row's
  // logits one row at a time.
  if (allLogits && lastOnly)
    rowsPerCall = 1;

  const int64_t vocab = e.vocab();
  if (allLogits)
    s.allLogits.resize(static_cast<size_t>(n * vocab));
  const float *last = nullptr;
  for (int64_t off = 0; off < n; off += rowsPerCall) {
    const int64_t rows = std::min(rowsPerCall, n - off);
    FM_RETURN_IF_ERROR(e.run(program, tokens + off, rows, s.position));
    s.position += rows;
    if (allLogits)
      for (int64_t r = 0; r < rows; ++r) {
        auto row = e.logitsRow(program, lastOnly ? 0 : r);
        if (!row)
          return row.status();
        std::memcpy(s.allLogits.data() + (off + r) * vocab, *row,
                    vocab * sizeof(float));
      }
    auto lastRow = e.logitsRow(program, lastOnly ? 0 : rows - 1);
    if (!lastRow)
      return lastRow.status();
    last = *lastRow;
  }
  Logits result;
  result.vocab = vocab;
  if (allLogits) {
    result.data = s.allLogits.data();
    result.rows = n;
  } else {
    result.data = last;
    result.rows = 1;
  }
  return result;
}

Expected<const float *> Session::decode(int32_t token) {
  Impl &s = *impl_;
  if (!s.status)
    return s.status;
  FM_RETURN_IF_ERROR(s.checkTokens(&token, 1));
  FM_RETURN_IF_ERROR(s.checkRoom(1));
  int program = s.pick({"decode", "prefill_last", "prefill"});
  if (program < 0)
    return Status::error(s.prefix() + "the model has no 'decode' program");
  const int64_t before = s.exec->collectiveStats().allReduces;
  FM_RETURN_IF_ERROR(s.exec->run(program, &token, 1, s.position));
  s.position += 1;
  s.decodeTokens += 1;
  s.decodeCollectives += s.exec->collectiveStats().allReduces - before;
  return s.exec->logitsRow(program, 0);
}

Expected<int32_t> Session::sample(Sampler &sampler,
                                  const float *logits) {
  Impl &s = *impl_;
  if (!s.status)
    return s.status;
  Communicator &comm = s.exec->comm();
  int32_t token = comm.rank() == 0
                      ? sampler.sample(logits, s.model->vocabSize())
                      : 0;
  if (comm.size() > 1)
    FM_RETURN_IF_ERROR(comm.broadcast(&token, 1, 0));
  return token;
}

SessionStats Session::stats() const {
  SessionStats st;
  const Impl &s = *impl_;
  if (!s.exec)
    return st;
  st.ranks = s.exec->comm().size();
  st.rank = s.exec->comm().rank();
  st.collectives = s.exec->collectiveStats().allReduces;
  st.collectiveMs = s.exec->collectiveStats().ms;
  st.decodeTokens = s.decodeTokens;
  st.decodeCollectives = s.decodeCollectives;
  return st;
}

Expected<std::vector<int32_t>>
Session::generate(const std::vector<int32_t> &prompt, int64_t maxNewTokens,
                  Sampler &sampler, const TokenCallback &callback) {
  auto first = prefill(prompt);
  if (!first)
    return first.status();
  const float *logits = first->last();
  std::vector<int32_t> out;
  for (int64_t i = 0; i < maxNewTokens; ++i) {
    auto sampled = sample(sampler, logits);
    if (!sampled)
      return sampled.status();
    const int32_t token = *sampled;
    out.push_back(token);
    if (callback && !callback(token))
      break;
    if (i + 1 == maxNewTokens || position() >= impl_->exec->capacity())
      break;
    auto next = decode(token);
    if (!next)
      return next.status();
    logits = *next;
  }
  return out;
}

Expected<std::vector<int32_t>>
Session::generate(const std::vector<int32_t> &prompt, int64_t maxNewTokens,
                  Sampler &sampler, LogitsProcessor &processor,
                  const TokenCallback &callback) {
  auto first = prefill(prompt);
  if (!first)
    return first.status();
  const float *logits = first->last();
  const int64_t vocab = first->vocab;
  // The processor edits a copy: the session's logits are read-only.
  std::vector<float> masked(static_cast<size_t>(vocab));
  std::vector<int32_t> out;
  for (int64_t i = 0; i < maxNewTokens; ++i) {
    std::copy(logits, logits + vocab, masked.begin());
    auto step = processor.process(masked.data(), vocab);
    if (!step)
      return step.status();
    if (step->stop)
      break;
    int32_t token = step->forced;
    if (token < 0) {
      auto sampled = sample(sampler, masked.data());
      if (!sampled)
        return sampled.status();
      token = *sampled;
    }
    FM_RETURN_IF_ERROR(processor.accept(token));
    out.push_back(token);
    if (callback && !callback(token))
      break;
    if (processor.finished() || i + 1 == maxNewTokens ||
        position() >= impl_->exec->capacity())
      break;
    auto next = decode(token);
    if (!next)
      return next.status();
    logits = *next;
  }
  return out;
}

} // namespace fm
