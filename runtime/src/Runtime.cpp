// fm::Model and fm::Session: the public API over the loader and executor.
#include "fm/runtime.h"

#include "Executor.h"
#include "Lora.h"
#include "commands/Command.h"
#include "fm/adapter.h"
#include "fm/artifact.h"
#include "fm/minisign.h"
#include "fm/sampler.h"
#include "hal/Registry.h"
#include "kernels/qgemm.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <mutex>
#include <utility>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

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
  bool oneTileWeights = false; // a packed projection int11 takes in one tile
  int64_t ranks = 1, numTracks = 0, numTrackBlocks = 0;
  std::vector<ProgramInfo> programs;
  std::vector<CacheInfo> caches;
  // The embedded tokenizer, parsed on first use.
  std::vector<int32_t> stopIds;
  std::mutex tokenizerMutex;
  std::unique_ptr<Expected<Tokenizer>> tokenizer;
  std::string signedBy;
  uint64_t sessionBytes = 0, copiedWeights = 0, prefillCopies = 0;
  bool hasImage = false, hasDecoder = false;
  ImageEncoderInfo image;
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
                                                    const LoadOptions &options) {
  const std::string &asked = options.device;
  hal::DeviceOptions deviceOptions;
  deviceOptions.cudaGraphs = options.cudaGraphs;
  auto runnable = [&](const std::string &target) {
    return !a.hasDispatch() || a.executable(target) != nullptr;
  };
  if (!asked.empty()) {
    auto device = hal::openDevice(asked, deviceOptions);
    if (!device)
      return Status::error(a.name() + ": " + device.message());
    if (!runnable((*device)->target()))
      return Status::error(a.name() + " has no executable for device '" +
                           asked + "' (it has: " + join(a.targets()) +
                           "); compile it with fmc compile --target " +
                           (*device)->target());
    return device;
  }
  // Only the kinds the artifact has code for are probed (all of them for
  // an artifact of micro-kernels only): probing loads a kind's driver.
  for (const std::string &kind : hal::deviceNames()) {
    if (a.hasDispatch() && !a.executable(kind))
      continue;
    const hal::DeviceInfo info = hal::probeDevice(kind);
    if (!info.present || !info.hardware)
      continue;
    auto device = hal::openDevice(info.name, deviceOptions);
    if (device && runnable((*device)->target()))
      return device;
  }
  return Status::error(a.name() + ": no device here can run it (its "
                       "executables are for: " +
                       join(a.targets()) + ")");
}

std::string bytesText(uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof(text), "%llu bytes (%.1f GiB)",
                static_cast<unsigned long long>(bytes),
                double(bytes) / double(uint64_t(1) << 30));
  return text;
}

uint64_t satAdd(uint64_t a, uint64_t b) { return a > ~uint64_t(0) - b ? ~uint64_t(0) : a + b; }
uint64_t satMul(uint64_t a, uint64_t b) {
  return a != 0 && b > ~uint64_t(0) / a ? ~uint64_t(0) : a * b;
}

uint64_t physicalMemory() {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0)
    return satMul(uint64_t(pages), uint64_t(page));
#endif
  return ~uint64_t(0);
}

// Whether `w` has a variant the device reads beside its rows (the CPU's
// Panel16 copy written by fmc).
bool hasBesideCopy(const fa::Weight &w, const hal::Device &device) {
  if (w.variants())
    for (const fa::WeightVariant *v : *w.variants())
      if (v->target()->str() == device.target() &&
          device.readsBeside(v->layout()->str()))
        return true;
  return false;
}

// The device's copies of packed weights for matmuls of several rows
// (hal::Device::prefillCopyBytes), once per weight, over every program that
// may run such a matmul or Moe: the most a session can make them hold (an
// upper bound: a fused pair of weights may share one copy).
uint64_t prefillCopyBytes(const ArtifactFile &a, const hal::Device &device) {
  const fa::Artifact &root = a.root();
  std::vector<bool> counted(root.weights()->size(), false);
  uint64_t total = 0;
  auto count = [&](int64_t index) {
    if (index < 0 || counted[index])
      return;
    counted[index] = true;
    const fa::Weight *w = root.weights()->Get(uint32_t(index));
    if (isQuantized(w->dtype())) // 2-D: the loader checked
      total = satAdd(total, device.prefillCopyBytes(rt::quantFormatOf(*w),
                                                    w->shape()->Get(0),
                                                    w->shape()->Get(1)));
  };
  for (const fa::Program *p : *root.programs())
    for (const fa::Command *c : *p->commands()) {
      const int64_t rows = c->rows() > 0       ? c->rows()
                           : c->last_row_only() ? 1
                                                : p->max_rows();
      if (rows <= 1)
        continue;
      // A matmul reads fmc's copy in the artifact (hal::Device::readsBeside),
      // mapped, not made.
      if (const fa::MatMul *m = c->op_as_MatMul())
        for (uint32_t index : *m->weights())
          if (!hasBesideCopy(*root.weights()->Get(index), device))
            count(index);
      // A Moe's experts (the router and the shared expert's gate keep the
      // row kernel).
      if (const fa::Moe *m = c->op_as_Moe()) {
        for (const auto *list : {m->gate(), m->up(), m->down()})
          for (uint32_t index : *list)
            count(index);
        for (int32_t index : {m->shared_gate(), m->shared_up(), m->shared_down()})
          count(index);
      }
    }
  return total;
}

// What a session of `a` on `device` needs as the artifact declares it (the
// caches, the largest arena, the weights when the device copies them, its
// copies for prefill), checked against `limit` (0: physical memory) before
// anything is allocated; the error names the largest part.
Status checkMemory(const ArtifactFile &a, const hal::Device &device,
                   uint64_t limit, uint64_t *sessionBytes,
                   uint64_t *copiedWeights, uint64_t *prefillCopies) {
  const fa::Artifact &root = a.root();
  struct Part {
    std::string what;
    uint64_t bytes;
  };
  std::vector<Part> parts;
  for (flatbuffers::uoffset_t i = 0; i < root.caches()->size(); ++i) {
    const fa::KvCache *c = root.caches()->Get(i);
    const uint64_t elem = dtypeSize(c->dtype());
    parts.push_back(
        {"cache " + std::to_string(i) + " ('" + c->name()->str() +
             "': slots " + std::to_string(c->slots()) + " x 2 x capacity " +
             std::to_string(c->capacity()) + " x kv_heads " +
             std::to_string(c->kv_heads()) + " x head_dim " +
             std::to_string(c->head_dim()) + " x " + std::to_string(elem) +
             " bytes)",
         satMul(satMul(satMul(satMul(satMul(c->slots(), 2), c->capacity()),
                              c->kv_heads()),
                       c->head_dim()),
                elem)});
  }
  const fa::Program *widest = nullptr;
  for (const fa::Program *p : *root.programs())
    if (!widest || p->arena_bytes() > widest->arena_bytes())
      widest = p;
  if (widest)
    parts.push_back({"program '" + widest->phase()->str() + "' arena_bytes",
                     widest->arena_bytes()});
  *copiedWeights = device.importCopiesWeights() ? a.dataSize() : 0;
  if (*copiedWeights)
    parts.push_back({"data_size (the weights, which device '" + device.name() +
                         "' copies)",
                     *copiedWeights});
  *prefillCopies = prefillCopyBytes(a, device);
  if (*prefillCopies)
    parts.push_back({"the copies of packed weights that device '" +
                         device.name() + "' makes for prefill",
                     *prefillCopies});
  uint64_t total = 0;
  const Part *largest = nullptr;
  for (const Part &part : parts) {
    total = satAdd(total, part.bytes);
    if (!largest || part.bytes > largest->bytes)
      largest = &part;
  }
  *sessionBytes = total;
  const bool physical = limit == 0;
  if (physical)
    limit = physicalMemory();
  if (total <= limit)
    return Status::ok();
  return Status::error(
      a.name() + ": a session needs " + bytesText(total) +
      ", more than the limit of " + bytesText(limit) +
      (physical ? " (this machine's physical memory)"
                : " (LoadOptions::maxMemoryBytes, fm-run --max-memory)") +
      "; the largest part is " + largest->what + ": " +
      bytesText(largest->bytes));
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
  auto device = chooseDevice(a, options);
  if (!device)
    return device.status();
  impl->device = std::move(*device);
  impl->deviceName = impl->device->name();
  impl->deviceDescription = impl->device->description();
  FM_RETURN_IF_ERROR(checkMemory(a, *impl->device, options.maxMemoryBytes,
                                 &impl->sessionBytes, &impl->copiedWeights,
                                 &impl->prefillCopies));
  if (a.signedBy())
    impl->signedBy = minisign::keyIdText(*a.signedBy());
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
      impl->oneTileWeights = impl->oneTileWeights ||
                             kernels::gemmTakesInt11InOneTile(rt::quantFormatOf(*w));
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
    if (const fa::ImageInput *in = p->image()) {
      ImageEncoderInfo &e = impl->image;
      impl->hasImage = true;
      e.channels = in->channels();
      e.height = in->height();
      e.width = in->width();
      for (int64_t c = 0; c < e.channels; ++c) {
        e.mean.push_back(in->mean() ? in->mean()->Get(c) : 0.0);
        e.std.push_back(in->std() ? in->std()->Get(c) : 1.0);
      }
      e.resample = in->resample() == fa::Resample::Bilinear ? "bilinear" : "bicubic";
      e.tokens = p->max_rows();
      e.tokenWidth = p->logits()->width();
      e.imageTokenIndex = root.image_token_index();
    } else {
      impl->hasDecoder = true;
    }
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
  impl->stopIds = a.stopIds();
  return make(std::move(impl));
}

Expected<ArtifactFile::Options> fileOptions(const LoadOptions &options,
                                            const std::string &name) {
  ArtifactFile::Options o;
  o.checkWeightsDigest = options.verifyHash;
  o.checkProgramDigest = !options.skipProgramDigestForFuzzing;
  for (size_t i = 0; i < options.trustedKeys.size(); ++i) {
    auto key = minisign::parsePublicKey(
        options.trustedKeys[i],
        name + ": trusted key " + std::to_string(i + 1));
    if (!key)
      return key.status();
    o.trustedKeys.push_back(*key);
  }
  return o;
}

} // namespace

std::vector<DeviceInfo> probeDevices() { return hal::probeDevices(); }

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

Expected<std::shared_ptr<Model>> Model::load(const std::string &path,
                                             const LoadOptions &options) {
  auto o = fileOptions(options, path);
  if (!o)
    return o.status();
  return finishLoad(ArtifactFile::open(path, *o), options,
                    [](std::unique_ptr<Impl> impl) {
                      return std::shared_ptr<Model>(new Model(std::move(impl)));
                    });
}

Expected<std::shared_ptr<Model>>
Model::loadFromBuffer(const uint8_t *data, size_t size, const std::string &name,
                      const LoadOptions &options) {
  auto o = fileOptions(options, name);
  if (!o)
    return o.status();
  return finishLoad(ArtifactFile::fromBuffer(data, size, name, *o),
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
bool Model::int11TakesEffect() const {
  return impl_->oneTileWeights && impl_->deviceName == "cpu";
}
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
bool Model::hasTokenizer() const { return impl_->artifact->hasTokenizer(); }
const std::vector<int32_t> &Model::stopIds() const { return impl_->stopIds; }

Expected<Tokenizer> Model::tokenizer() const {
  std::lock_guard<std::mutex> lock(impl_->tokenizerMutex);
  if (!impl_->tokenizer)
    impl_->tokenizer =
        std::make_unique<Expected<Tokenizer>>(impl_->artifact->tokenizer());
  return *impl_->tokenizer;
}

std::string Model::tokenizerDigest() const {
  const fa::TokenizerFiles *t = impl_->artifact->root().tokenizer();
  if (!t)
    return {};
  format::Hasher hasher;
  for (const flatbuffers::String *file : {t->tokenizer_json(), t->config_json()}) {
    const uint64_t size = file ? file->size() : 0;
    uint8_t length[8];
    for (int i = 0; i < 8; ++i)
      length[i] = uint8_t(size >> (8 * i));
    hasher.update(length, sizeof(length));
    if (size)
      hasher.update(file->data(), size);
  }
  return format::hex(hasher.finish());
}

Status checkSameTokens(const Model &model, const Model &other,
                       const std::string &role,
                       const std::string &consequence) {
  if (model.vocabSize() != other.vocabSize())
    return Status::error("the " + role + " " + other.name() +
                         " has a vocabulary of " +
                         std::to_string(other.vocabSize()) + " tokens, " +
                         model.name() + " one of " +
                         std::to_string(model.vocabSize()) + ": " + consequence);
  const std::string md = model.tokenizerDigest(), od = other.tokenizerDigest();
  if (md == od)
    return Status::ok();
  auto which = [](const Model &x, const std::string &digest) {
    return x.name() + (digest.empty() ? " embeds no tokenizer"
                                      : " embeds tokenizer " + digest.substr(0, 16));
  };
  return Status::error("the " + role + " " + other.name() + " and " +
                       model.name() + " do not tokenize alike: " +
                       which(other, od) + ", " + which(model, md) +
                       " (BLAKE2b of tokenizer.json and tokenizer_config.json)");
}

const std::string &Model::signedBy() const { return impl_->signedBy; }
uint64_t Model::sessionBytes() const { return impl_->sessionBytes; }
uint64_t Model::copiedWeightBytes() const { return impl_->copiedWeights; }
uint64_t Model::prefillCopyBytes() const { return impl_->prefillCopies; }
uint64_t Model::prefillCopiesMade() const {
  return impl_->device->prefillCopiesMade();
}

Status Model::checkFile(bool weights) const {
  const ArtifactFile &a = *impl_->artifact;
  FM_RETURN_IF_ERROR(a.checkUnchanged());
  if (weights) {
    const format::Digest actual = format::digest(a.data(), a.dataSize());
    if (actual != a.weightsDigest())
      return Status::error(a.name() + ": weights digest mismatch: the data "
                                      "section hashes to " +
                           format::hex(actual) + ", the artifact says " +
                           format::hex(a.weightsDigest()));
  }
  return Status::ok();
}
const ImageEncoderInfo *Model::imageEncoder() const {
  return impl_->hasImage ? &impl_->image : nullptr;
}
bool Model::hasDecoder() const { return impl_->hasDecoder; }

const ProgramInfo *Model::program(const std::string &phase) const {
  for (const ProgramInfo &p : impl_->programs)
    if (p.phase == phase)
      return &p;
  return nullptr;
}

// ---------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------

const rt::LoadedModel &rt::loadedModel(const Model &model) {
  return model.impl().loaded;
}

struct Session::Impl {
  std::shared_ptr<Model> model;
  Status status;
  std::unique_ptr<rt::Executor> exec;
  /// The attached adapters and what they add per base weight (the
  /// executor's kernels point into both).
  std::vector<AdapterUse> adapters;
  std::unique_ptr<rt::LoraTable> lora;
  int64_t position = 0;
  std::vector<int32_t> context; // the tokens at positions 0 .. position - 1
  std::vector<float> allLogits;
  const std::atomic<bool> *interrupt = nullptr; // setInterrupt
  int64_t decodeTokens = 0, decodeCollectives = 0;
  /// Image tokens: a VLM's pending images, one after the other (an encoder
  /// alone keeps its last image's); per prompt row, its image token or null.
  std::vector<float> imageRows;
  int64_t pendingImages = 0;
  std::vector<const float *> embedRows;

  std::string prefix() const { return model->name() + ": "; }

  /// The error of a prompt whose placeholders do not take the pending
  /// images exactly; fills embedRows (one pointer per token) when they do.
  Status placeImages(const int32_t *tokens, int64_t n) {
    embedRows.clear();
    const ImageEncoderInfo *e = model->imageEncoder();
    if (!e || e->imageTokenIndex < 0)
      return Status::ok();
    const int64_t per = e->tokens, id = e->imageTokenIndex;
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i)
      count += tokens[i] == id;
    auto images = [](int64_t k) {
      return std::to_string(k) + (k == 1 ? " image" : " images");
    };
    if (count != per * pendingImages)
      return Status::error(
          prefix() + "the prompt has " + std::to_string(count) +
          " image placeholders (token " + std::to_string(id) + ") but " +
          images(pendingImages) + (pendingImages == 1 ? " was" : " were") +
          " encoded: each image takes " + std::to_string(per) +
          " consecutive placeholders");
    for (int64_t i = 0; i < n;) {
      if (tokens[i] != id) {
        ++i;
        continue;
      }
      int64_t end = i;
      while (end < n && tokens[end] == id)
        ++end;
      if ((end - i) % per != 0)
        return Status::error(prefix() + "a run of " + std::to_string(end - i) +
                             " image placeholders at position " +
                             std::to_string(i) + " is not a whole number of "
                             "images (" + std::to_string(per) + " tokens each)");
      i = end;
    }
    if (count == 0)
      return Status::ok();
    embedRows.assign(static_cast<size_t>(n), nullptr);
    int64_t k = 0;
    for (int64_t i = 0; i < n; ++i)
      if (tokens[i] == id)
        embedRows[i] = imageRows.data() + (k++) * e->tokenWidth;
    return Status::ok();
  }

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

namespace {
constexpr std::pair<SessionOptions::Activations, const char *>
    kActivationNames[] = {{SessionOptions::Activations::Int8x2, "int8x2"},
                          {SessionOptions::Activations::Int11, "int11"},
                          {SessionOptions::Activations::Int8, "int8"},
                          {SessionOptions::Activations::F32, "f32"}};
} // namespace

bool int11TakesEffect() {
  return kernels::gemmTakesInt11InOneTile(
      kernels::QuantFormat{4, 32, kernels::QuantGrid::Balanced});
}

const char *activationsName(SessionOptions::Activations a) {
  for (const auto &[value, name] : kActivationNames)
    if (value == a)
      return name;
  return "?";
}

bool parseActivations(std::string_view name, SessionOptions::Activations *out) {
  for (const auto &[value, n] : kActivationNames)
    if (name == n) {
      *out = value;
      return true;
    }
  return false;
}

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
  case SessionOptions::Activations::Int11:
    eo.activations = kernels::QActivations::Int11Fast;
    break;
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
    if (impl_->exec)
      impl_->context.reserve(static_cast<size_t>(
          std::min<int64_t>(impl_->exec->capacity(), int64_t(1) << 20)));
    if (impl_->exec && !options.adapters.empty())
      impl_->status = setAdapters(options.adapters);
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
Communicator &Session::communicator() const {
  static SingleProcess alone; // a session that could not be built
  return impl_->exec ? impl_->exec->comm() : alone;
}

Status Session::reset() {
  if (!impl_->status)
    return impl_->status;
  impl_->position = 0;
  impl_->context.clear();
  return Status::ok();
}

const std::vector<int32_t> &Session::tokens() const { return impl_->context; }

Status Session::keepPrefix(int64_t n) {
  Impl &s = *impl_;
  if (!s.status)
    return s.status;
  // The kept rows were computed from the file's weights: a changed file is stale for them too.
  FM_RETURN_IF_ERROR(s.model->impl().artifact->checkUnchanged());
  if (n < 0 || n > s.position)
    return Status::error(s.prefix() + "keepPrefix(" + std::to_string(n) +
                         "): the context has " + std::to_string(s.position) +
                         " tokens");
  s.position = n;
  s.context.resize(static_cast<size_t>(n));
  return Status::ok();
}

Expected<Logits> Session::prefill(const int32_t *tokens, int64_t n,
                                  bool allLogits, int64_t chunk) {
  Impl &s = *impl_;
  if (!s.status)
    return s.status;
  FM_RETURN_IF_ERROR(s.model->impl().artifact->checkUnchanged());
  if (n < 1 || !tokens)
    return Status::error(s.prefix() + "prefill needs at least one token");
  if (chunk < 0)
    return Status::error(s.prefix() + "prefill chunk " + std::to_string(chunk) +
                         " is negative");
  if (!s.model->hasDecoder())
    return Status::error(s.prefix() + "is an image encoder alone (no decoder): "
                                      "it runs on images, not on tokens");
  FM_RETURN_IF_ERROR(s.checkTokens(tokens, n));
  FM_RETURN_IF_ERROR(s.checkRoom(n));
  FM_RETURN_IF_ERROR(s.placeImages(tokens, n));

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
    if (s.interrupt && s.interrupt->load(std::memory_order_relaxed)) {
      s.embedRows.clear();
      s.imageRows.clear();
      s.pendingImages = 0;
      return Status::error(s.prefix() + "prefill interrupted after " +
                           std::to_string(off) + " of " + std::to_string(n) +
                           " tokens");
    }
    const int64_t rows = std::min(rowsPerCall, n - off);
    FM_RETURN_IF_ERROR(e.run(program, tokens + off, rows, s.position,
                             s.embedRows.empty() ? nullptr
                                                 : s.embedRows.data() + off));
    s.position += rows;
    s.context.insert(s.context.end(), tokens + off, tokens + off + rows);
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
  // The prompt used the pending images up.
  if (!s.embedRows.empty() || s.pendingImages > 0) {
    s.embedRows.clear();
    s.imageRows.clear();
    s.pendingImages = 0;
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

void Session::setInterrupt(const std::atomic<bool> *flag) {
  impl_->interrupt = flag;
}

Expected<ImageTokens> Session::encodeImage(const float *image, int64_t count) {
  Impl &s = *impl_;
  if (!s.status)
    return s.status;
  FM_RETURN_IF_ERROR(s.model->impl().artifact->checkUnchanged());
  const ImageEncoderInfo *e = s.model->imageEncoder();
  if (!e)
    return Status::error(s.prefix() + "has no image encoder (no encode_image "
                                      "program): it takes no images");
  const int64_t want = e->channels * e->height * e->width;
  if (!image || count != want)
    return Status::error(
        s.prefix() + "the image encoder takes a [" +
        std::to_string(e->channels) + ", " + std::to_string(e->height) + ", " +
        std::to_string(e->width) + "] float32 tensor (" + std::to_string(want) +
        " floats), got " + std::to_string(image ? count : 0) + " floats");
  rt::Executor &x = *s.exec;
  const int program = x.findProgram("encode_image");
  FM_RETURN_IF_ERROR(x.runImage(program, image, count));
  const int64_t floats = e->tokens * e->tokenWidth;
  // A VLM keeps every image for the next prompt; an encoder alone, the last.
  if (e->imageTokenIndex < 0)
    s.imageRows.clear();
  const size_t at = s.imageRows.size();
  s.imageRows.resize(at + static_cast<size_t>(floats));
  FM_RETURN_IF_ERROR(x.readOutput(program, s.imageRows.data() + at));
  if (e->imageTokenIndex >= 0)
    s.pendingImages += 1;
  ImageTokens t;
  t.data = s.imageRows.data() + at;
  t.rows = e->tokens;
  t.width = e->tokenWidth;
  return t;
}

Status Session::addImageTokens(const float *tokens, int64_t count) {
  Impl &s = *impl_;
  if (!s.status)
    return s.status;
  const ImageEncoderInfo *e = s.model->imageEncoder();
  if (!e || e->imageTokenIndex < 0)
    return Status::error(s.prefix() + "is no VLM (no image placeholders in "
                                      "its prompts): it takes no image tokens");
  const int64_t floats = e->tokens * e->tokenWidth;
  if (!tokens || count != floats)
    return Status::error(s.prefix() + "an image's tokens are " +
                         std::to_string(e->tokens) + " x " +
                         std::to_string(e->tokenWidth) + " floats, got " +
                         std::to_string(tokens ? count : 0));
  s.imageRows.insert(s.imageRows.end(), tokens, tokens + floats);
  s.pendingImages += 1;
  return Status::ok();
}

int64_t Session::pendingImages() const { return impl_->pendingImages; }

void Session::clearImages() {
  impl_->imageRows.clear();
  impl_->pendingImages = 0;
}

Expected<const float *> Session::decode(int32_t token) {
  Impl &s = *impl_;
  if (!s.status)
    return s.status;
  FM_RETURN_IF_ERROR(s.model->impl().artifact->checkUnchanged());
  if (!s.model->hasDecoder())
    return Status::error(s.prefix() + "is an image encoder alone (no decoder): "
                                      "it runs on images, not on tokens");
  FM_RETURN_IF_ERROR(s.checkTokens(&token, 1));
  FM_RETURN_IF_ERROR(s.checkRoom(1));
  int program = s.pick({"decode", "prefill_last", "prefill"});
  if (program < 0)
    return Status::error(s.prefix() + "the model has no 'decode' program");
  const int64_t before = s.exec->collectiveStats().allReduces;
  FM_RETURN_IF_ERROR(s.exec->run(program, &token, 1, s.position));
  s.position += 1;
  s.context.push_back(token);
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

uint64_t Session::memoryBytes() const {
  return impl_->exec ? impl_->exec->allocatedBytes() : 0;
}

Status Session::setAdapters(const std::vector<AdapterUse> &adapters) {
  Impl &s = *impl_;
  if (!s.exec)
    return s.status;
  auto table = std::make_unique<rt::LoraTable>();
  for (size_t i = 0; i < adapters.size(); ++i) {
    const AdapterUse &use = adapters[i];
    if (!use.adapter)
      return Status::error(s.prefix() + "adapter " + std::to_string(i) +
                           " is null");
    const Adapter::Impl &a = use.adapter->impl();
    if (a.model.get() != s.model.get())
      return Status::error(use.adapter->name() + " was loaded for " +
                           a.model->name() + ", not for this session's model " +
                           s.model->name() + " (Adapter::load it for each)");
    if (!std::isfinite(use.scale))
      return Status::error(use.adapter->name() + ": scale " +
                           std::to_string(use.scale) + " is not finite");
    if (table->empty())
      table->resize(s.model->impl().artifact->root().weights()->size());
    for (const auto &[weight, piece] : a.pieces) {
      rt::LoraPiece p = piece;
      p.scale *= use.scale;
      (*table)[weight].push_back(std::move(p));
    }
  }
  // The executor points into the new table; the old one (and the adapters
  // it came from) may go only after the kernels were rebuilt.
  const rt::LoraTable *next = adapters.empty() ? nullptr : table.get();
  try {
    FM_RETURN_IF_ERROR(s.exec->setLora(next));
  } catch (const std::exception &e) {
    return Status::error(s.prefix() + "cannot attach the adapters: " + e.what());
  }
  s.lora = adapters.empty() ? nullptr : std::move(table);
  s.adapters = adapters;
  return Status::ok();
}

const std::vector<AdapterUse> &Session::adapters() const {
  return impl_->adapters;
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
  st.collectiveTransport = s.exec->collectiveStats().transport;
  st.decodeTokens = s.decodeTokens;
  st.decodeCollectives = s.decodeCollectives;
  st.deviceMs = s.exec->deviceMs();
  const hal::Queue::LaunchCounts launches = s.exec->launchCounts();
  st.graphLaunches = launches.graph;
  st.directLaunches = launches.direct;
  st.firstRunMs = s.exec->firstRunMs();
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
                  Sampler &sampler, TokenConstraint &processor,
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
