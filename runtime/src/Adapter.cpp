// fm::Adapter (fm/adapter.h): a verified .fmba bound to one loaded model.
// Binding checks what AdapterFile cannot know alone: that the model is the
// adapter's base (architecture, then the checkpoint's source digest), that
// every weight it updates is one of the model's projections (a MatMul
// weight, not an embedding table), with A's inputs and B's outputs that
// weight's shape. The matrices are then imported to the model's device
// (the CPU reads the mapping in place).
#include "Lora.h"

#include "fm/artifact.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace fm {

namespace fa = fm::artifact;
namespace fad = fm::adapter;

namespace {

std::string shapeText(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

std::string architecture(const std::string &family, uint32_t hidden,
                         uint32_t layers, uint32_t vocab) {
  return family + " (hidden " + std::to_string(hidden) + ", " +
         std::to_string(layers) + " layers, vocab " + std::to_string(vocab) +
         ")";
}

hal::WeightDesc matrixDesc(const fad::Matrix &m, hal::Buffer *buffer,
                           const std::string &name) {
  hal::WeightDesc d;
  d.buffer = buffer;
  d.offset = m.offset();
  d.bytes = m.size();
  if (m.dtype() == fad::DType::Q8) {
    d.kind = hal::WeightKind::Quant;
    d.format = kernels::QuantFormat{8, int(m.group()), kernels::QuantGrid::Balanced};
  } else {
    d.kind = hal::WeightKind::F16;
  }
  d.shape = {int64_t(m.rows()), int64_t(m.cols())};
  d.name = name;
  return d;
}

Expected<std::shared_ptr<Adapter>>
bindAdapter(std::shared_ptr<Model> model, Expected<std::unique_ptr<AdapterFile>> file,
     std::shared_ptr<Adapter> (*make)(std::unique_ptr<Adapter::Impl>)) {
  if (!file)
    return file.status();
  if (!model)
    return Status::error((*file)->name() + ": no model to attach it to");
  const rt::LoadedModel &loaded = rt::loadedModel(*model);
  const ArtifactFile &base = *loaded.artifact;
  const fa::Artifact &broot = base.root();
  const AdapterFile &f = **file;
  const fad::Adapter &root = f.root();
  const fad::Base &want = *root.base();
  const std::string &n = f.name();

  // The architecture first (the clearer message), then the digest.
  const std::string wanted = architecture(want.family()->str(), want.hidden_size(),
                                          want.num_layers(), want.vocab_size());
  const std::string have =
      architecture(broot.family()->str(), broot.hidden_size(),
                   broot.num_layers(), broot.vocab_size());
  if (wanted != have)
    return Status::error(n + " was compiled for another base: a " + wanted +
                         " model, but " + base.name() + " is " + have);
  if (!base.hasSourceDigest())
    return Status::error(base.name() +
                         " records no source-weights digest (an fmc from "
                         "before adapters compiled it): recompile it to "
                         "attach " + n);
  if (base.sourceDigest() != f.baseSourceDigest())
    return Status::error(
        n + " was compiled for another base: for the checkpoint with source "
            "digest " +
        format::hex(f.baseSourceDigest()).substr(0, 16) + ", but " +
        base.name() + " was compiled from " +
        format::hex(base.sourceDigest()).substr(0, 16) +
        " (an adapter attaches to every build of the checkpoint it was "
        "compiled for, and to no other)");

  // The model's projections: MatMul weights that are no embedding table.
  const auto *weights = broot.weights();
  std::vector<bool> projection(weights->size(), false), table(weights->size(), false);
  for (const fa::Program *p : *broot.programs())
    for (const fa::Command *c : *p->commands()) {
      if (const fa::MatMul *mm = c->op_as_MatMul())
        for (uint32_t w : *mm->weights())
          projection[w] = true;
      if (const fa::Embed *e = c->op_as_Embed())
        table[e->table_weight()] = true;
    }
  std::unordered_map<std::string, uint32_t> byName;
  for (flatbuffers::uoffset_t i = 0; i < weights->size(); ++i)
    byName.emplace(weights->Get(i)->name()->str(), i);

  auto impl = std::make_unique<Adapter::Impl>();
  impl->model = model;
  std::vector<std::pair<uint32_t, const fad::Lora *>> found;
  for (flatbuffers::uoffset_t i = 0; i < root.loras()->size(); ++i) {
    const fad::Lora &l = *root.loras()->Get(i);
    const std::string name = l.weight()->str();
    const std::string where =
        n + ": lora " + std::to_string(i) + " ('" + name + "'): ";
    auto it = byName.find(name);
    if (it == byName.end())
      return Status::error(where + base.name() + " has no weight '" + name + "'");
    const uint32_t index = it->second;
    if (!projection[index] || table[index])
      return Status::error(where + "'" + name + "' is not a projection of " +
                           base.name() +
                           " (adapters update the weights of its matmuls, "
                           "not embedding tables or experts)");
    const fa::Weight &w = *weights->Get(index);
    const int64_t out = w.shape()->Get(0), in = w.shape()->Get(1);
    if (l.a()->cols() != in || l.b_t()->cols() != out)
      return Status::error(
          where + "A is " + shapeText(l.rank(), l.a()->cols()) + " and B " +
          shapeText(l.b_t()->cols(), l.rank()) + ", but the base weight is " +
          shapeText(out, in) + " (A must be [rank, " + std::to_string(in) +
          "], B [" + std::to_string(out) + ", rank])");
    found.emplace_back(index, &l);
  }

  auto data = loaded.device->importWeights(f.data(), f.dataSize());
  if (!data)
    return Status::error(n + ": " + data.message());
  impl->data = std::move(*data);
  for (const auto &[index, l] : found) {
    rt::LoraPiece p;
    p.a = matrixDesc(*l->a(), impl->data.get(), l->weight()->str() + " lora_A");
    p.bt = matrixDesc(*l->b_t(), impl->data.get(), l->weight()->str() + " lora_B");
    p.rank = l->rank();
    p.scale = l->scale();
    impl->maxRank = std::max<int64_t>(impl->maxRank, p.rank);
    impl->pieces.emplace_back(index, std::move(p));
  }
  impl->file = std::move(*file);
  return make(std::move(impl));
}

} // namespace

Adapter::Adapter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Adapter::~Adapter() = default;

Expected<std::shared_ptr<Adapter>> Adapter::load(std::shared_ptr<Model> model,
                                                 const std::string &path) {
  return bindAdapter(std::move(model), AdapterFile::open(path, AdapterFile::Options()),
              [](std::unique_ptr<Impl> impl) {
                return std::shared_ptr<Adapter>(new Adapter(std::move(impl)));
              });
}

Expected<std::shared_ptr<Adapter>>
Adapter::loadFromBuffer(std::shared_ptr<Model> model, const uint8_t *data,
                        size_t size, const std::string &name,
                        const AdapterFile::Options &options) {
  return bindAdapter(std::move(model),
              AdapterFile::fromBuffer(data, size, name, options),
              [](std::unique_ptr<Impl> impl) {
                return std::shared_ptr<Adapter>(new Adapter(std::move(impl)));
              });
}

const std::string &Adapter::name() const { return impl_->file->name(); }
const Model &Adapter::model() const { return *impl_->model; }
const AdapterFile &Adapter::file() const { return *impl_->file; }
int64_t Adapter::loras() const { return int64_t(impl_->pieces.size()); }
int64_t Adapter::maxRank() const { return impl_->maxRank; }

} // namespace fm
