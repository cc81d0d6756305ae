// The adapter writer (AdapterWriter.h). The data section is built in
// memory (an adapter is ~1-10% of its base), then the FlatBuffer that
// points into it; the digest covers both with its own bytes as zeros.
#include "targets/artifact/AdapterWriter.h"

#include "targets/artifact/AtomicFile.h"

#include "fm/fmba_generated.h"
#include "kernels/lora.h"
#include "kernels/quantize.h"

#include <algorithm>
#include <cstring>

namespace fm::writer {
namespace {

namespace fad = ::fm::adapter;

constexpr int kGroup = 32;

/// One matrix appended to the data section.
struct Placed {
  fad::DType dtype = fad::DType::F16;
  uint32_t rows = 0, cols = 0, group = 0;
  uint64_t offset = 0, size = 0;
};

class DataSection {
public:
  Placed add(const std::vector<float> &values, int64_t rows, int64_t cols,
             bool w8, AdapterSummary &s) {
    Placed p;
    p.rows = uint32_t(rows);
    p.cols = uint32_t(cols);
    p.offset = bytes_.size();
    const bool q8 = w8 && cols % kGroup == 0;
    p.size = kernels::loraMatrixBytes(rows, cols, q8, kGroup);
    bytes_.resize(format::alignData(p.offset + p.size), 0);
    uint8_t *out = bytes_.data() + p.offset;
    if (q8) {
      p.dtype = fad::DType::Q8;
      p.group = kGroup;
      const kernels::QuantError e = kernels::quantizeRows(
          values.data(), rows, cols,
          kernels::QuantFormat{8, kGroup, kernels::QuantGrid::Balanced}, out);
      s.sqError += e.sqError;
      s.sqSum += e.sqSum;
      ++s.q8Matrices;
    } else {
      for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t h = kernels::floatToHalf(values[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      ++s.f16Matrices;
    }
    return p;
  }
  std::vector<uint8_t> &bytes() { return bytes_; }

private:
  std::vector<uint8_t> bytes_;
};

flatbuffers::Offset<fad::Matrix> matrix(flatbuffers::FlatBufferBuilder &fbb,
                                        const Placed &p) {
  return fad::CreateMatrix(fbb, p.dtype, p.rows, p.cols, p.offset, p.size,
                           p.group);
}

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Expected<AdapterSummary> writeAdapter(const import::PeftAdapter &adapter,
                                            const AdapterBaseInfo &base,
                                            const AdapterWriteOptions &options,
                                            const std::string &path) {
  if (adapter.loras.empty())
    return error(adapter.dir + ": no LoRA weights to write");
  AdapterSummary s;
  DataSection data;
  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  fbb.ForceDefaults(true); // schema_version and the digest are always stored
  std::vector<flatbuffers::Offset<fad::Lora>> loras;
  std::vector<float> bt;
  s.minRank = s.maxRank = adapter.loras.front().rank;
  s.minScale = s.maxScale = adapter.loras.front().scale;
  // The A's of consecutive projections (one base matmul's stacked weights)
  // go back to back, so a device computes them in one pass over x: first
  // every A, then every Bᵀ.
  std::vector<Placed> as, bs;
  for (const import::LoraWeights &l : adapter.loras)
    as.push_back(data.add(l.a, l.rank, l.in, options.w8, s));
  for (const import::LoraWeights &l : adapter.loras) {
    bt.assign(size_t(l.rank * l.out), 0.0f);
    for (int64_t o = 0; o < l.out; ++o)
      for (int64_t i = 0; i < l.rank; ++i)
        bt[i * l.out + o] = l.b[o * l.rank + i];
    bs.push_back(data.add(bt, l.rank, l.out, options.w8, s));
  }
  for (size_t i = 0; i < adapter.loras.size(); ++i) {
    const import::LoraWeights &l = adapter.loras[i];
    loras.push_back(fad::CreateLora(
        fbb, fbb.CreateString(l.weight), fbb.CreateString(l.module),
        uint32_t(l.rank), float(l.alpha), float(l.scale), matrix(fbb, as[i]),
        matrix(fbb, bs[i])));
    s.parameters += uint64_t(l.rank) * uint64_t(l.in + l.out);
    s.minRank = std::min(s.minRank, l.rank);
    s.maxRank = std::max(s.maxRank, l.rank);
    s.minScale = std::min(s.minScale, l.scale);
    s.maxScale = std::max(s.maxScale, l.scale);
  }
  fad::Digest digest(flatbuffers::span<const uint8_t, 32>(base.sourceDigest.data(), 32));
  auto baseTable = fad::CreateBase(
      fbb, fbb.CreateString(base.family), fbb.CreateString(base.modelName),
      base.vocabSize, base.hiddenSize, base.numLayers, &digest,
      fbb.CreateString(adapter.baseModelNameOrPath));
  const fad::Digest zero;
  auto root = fad::CreateAdapter(
      fbb, format::kAdapterSchemaVersion, fbb.CreateString(adapter.name),
      baseTable, fbb.CreateVector(loras), data.bytes().size(), &zero,
      fbb.CreateString(adapter.configJson));
  fbb.FinishSizePrefixed(root, format::kAdapterFileIdentifier);

  std::vector<uint8_t> head(fbb.GetBufferPointer(),
                            fbb.GetBufferPointer() + fbb.GetSize());
  head.resize(format::alignData(head.size()), 0);
  const auto *written = fad::GetSizePrefixedAdapter(head.data());
  const size_t digestAt =
      reinterpret_cast<const uint8_t *>(written->digest()) - head.data();
  format::Hasher hash;
  hash.update(head.data(), head.size()); // the digest's bytes are still zero
  hash.update(data.bytes().data(), data.bytes().size());
  s.digest = hash.finish();
  std::memcpy(head.data() + digestAt, s.digest.data(), format::kDigestBytes);

  auto file = AtomicFile::create(path);
  if (!file)
    return file.takeError();
  if (llvm::Error e = file->write(head.data(), head.size()))
    return std::move(e);
  if (llvm::Error e = file->write(data.bytes().data(), data.bytes().size()))
    return std::move(e);
  s.fileBytes = file->size();
  if (llvm::Error e = file->commit())
    return std::move(e);
  s.dataBytes = data.bytes().size();
  s.loras = unsigned(adapter.loras.size());
  return s;
}

} // namespace fm::writer
