// Builds .fmb artifacts in memory for the runtime tests (and the fuzzer's
// seed corpus): FlatBuffer, padding and data section, with knobs to break
// each part on purpose.
#pragma once

#include "fm/artifact.h"
#include "fm/fmb_generated.h"
#include "fm/format.h"
#include "kernels/quantize.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace fm::test {

namespace fa = fm::artifact;

/// A buffer `offset` floats into the arena, rows `stride` floats apart
/// (the schema counts bytes: the tests think in floats).
inline fa::BufferRef buf(uint64_t offset, uint32_t stride, uint32_t width) {
  return fa::BufferRef(4 * offset, 4 * stride, width);
}

/// Weight indices of a Moe command's shared expert, all four (or -1).
struct SharedExpert {
  int32_t gate = -1, up = -1, down = -1, expertGate = -1;
};

class ArtifactBuilder {
public:
  using Cmd = flatbuffers::Offset<fa::Command>;

  // Artifact fields.
  uint32_t schemaVersion = fm::format::kSchemaVersion;
  std::string family = "test";
  uint32_t vocab = 0;
  uint32_t hidden = 0;
  uint32_t layers = 1;
  uint32_t ranks = 1;
  uint32_t numTracks = 0;
  uint32_t numTrackBlocks = 0;
  /// An embedded tokenizer (TokenizerFiles) when tokenizerJson is set.
  std::string tokenizerJson, tokenizerConfig;
  std::vector<int32_t> stopIds;
  /// Block, track and rank of the commands built from now on.
  struct Placement {
    int32_t block = -1, track = -1, rank = -1;
  } placement;
  // Overrides (negative: computed).
  int64_t dataSizeOverride = -1;
  /// Store digests that do not match (one bit flipped).
  bool corruptProgramDigest = false;
  bool corruptWeightsDigest = false;
  /// The checkpoint digest LoRA adapters bind to (32 bytes; empty: none).
  std::vector<uint8_t> sourceDigest;

  /// Adds an f32 weight; data.size() must match the shape unless `bytes`
  /// says otherwise. Returns its index.
  uint32_t addWeight(const std::string &name, std::vector<int64_t> shape,
                     const std::vector<float> &data) {
    std::vector<uint8_t> bytes(data.size() * sizeof(float));
    if (!data.empty())
      std::memcpy(bytes.data(), data.data(), bytes.size());
    return addRawWeight(name, std::move(shape), fa::DType::F32, std::move(bytes));
  }
  /// Adds an f32 0-d weight (a scale).
  uint32_t addScalar(const std::string &name, float value) {
    return addWeight(name, {}, {value});
  }
  /// Adds `data` ([N][K], N * K floats) packed in format `f` (quantizeRows)
  /// as a Q2/Q4/Q8 weight.
  uint32_t addQuantWeight(const std::string &name, int64_t N, int64_t K,
                          const std::vector<float> &data,
                          fm::kernels::QuantFormat f) {
    std::vector<uint8_t> bytes(size_t(N) * fm::kernels::packedRowBytes(f, K));
    fm::kernels::quantizeRows(data.data(), N, K, f, bytes.data());
    return addRawWeight(name, {N, K}, quantDType(f.bits), std::move(bytes),
                        uint32_t(f.group),
                        f.grid == fm::kernels::QuantGrid::Affine
                            ? fa::QuantGrid::Affine
                            : fa::QuantGrid::Balanced);
  }
  static fa::DType quantDType(int bits) {
    return bits == 2 ? fa::DType::Q2 : bits == 4 ? fa::DType::Q4 : fa::DType::Q8;
  }
  /// Adds `bytes` as they are; `group` and `grid` are written as given (the
  /// packed formats' fields).
  uint32_t addRawWeight(const std::string &name, std::vector<int64_t> shape,
                        fa::DType dtype, std::vector<uint8_t> bytes,
                        uint32_t group = 0,
                        fa::QuantGrid grid = fa::QuantGrid::Balanced) {
    Weight w;
    w.name = name;
    w.shape = std::move(shape);
    w.dtype = dtype;
    w.bytes = std::move(bytes);
    w.group = group;
    w.grid = grid;
    w.gapBefore = pendingGap_;
    pendingGap_ = 0;
    weights_.push_back(std::move(w));
    return static_cast<uint32_t>(weights_.size() - 1);
  }
  /// Leaves `bytes` of unused data before the next weight (breaks the
  /// contiguity of weights that follow each other).
  void addGap(uint64_t bytes) { pendingGap_ += bytes; }
  void overrideWeightOffset(uint32_t index, uint64_t offset) {
    weights_[index].offsetOverride = offset;
    weights_[index].hasOffsetOverride = true;
  }
  void overrideWeightSize(uint32_t index, uint64_t size) {
    weights_[index].sizeOverride = size;
    weights_[index].hasSizeOverride = true;
  }

  uint32_t addCache(const std::string &name, uint32_t slots, uint32_t kvHeads,
                    uint32_t headDim, uint32_t capacity,
                    fa::DType dtype = fa::DType::F32) {
    caches_.push_back(fa::CreateKvCacheDirect(fbb_, name.c_str(), slots,
                                              kvHeads, headDim, capacity, dtype));
    return static_cast<uint32_t>(caches_.size() - 1);
  }

  Cmd embed(uint32_t table, fa::BufferRef out, const std::string &layer = "",
            bool lastRowOnly = false) {
    auto op = fa::CreateEmbed(fbb_, table, &out);
    return command(fa::Op::Embed, op.Union(), layer, lastRowOnly);
  }
  Cmd matmul(fa::BufferRef x, const std::vector<uint32_t> &weights,
             fa::BufferRef y, uint32_t k, uint32_t n, bool accumulate = false,
             const std::string &layer = "", bool lastRowOnly = false) {
    auto op = fa::CreateMatMulDirect(fbb_, &x, &weights, &y, k, n, accumulate);
    return command(fa::Op::MatMul, op.Union(), layer, lastRowOnly);
  }
  Cmd attention(fa::BufferRef q, fa::BufferRef out, uint32_t cache,
                uint32_t slot, uint32_t heads, uint32_t kvHeads,
                uint32_t headDim, float scale, uint32_t window = 0,
                const std::string &layer = "", bool lastRowOnly = false) {
    auto op = fa::CreateAttention(fbb_, &q, &out, cache, slot, heads, kvHeads,
                                  headDim, scale, window);
    return command(fa::Op::Attention, op.Union(), layer, lastRowOnly);
  }
  /// Attention over an i8 cache: with the weight indices of its K and V
  /// scales (or any values, to break it).
  Cmd attentionI8(fa::BufferRef q, fa::BufferRef out, uint32_t cache,
                  uint32_t slot, uint32_t heads, uint32_t kvHeads,
                  uint32_t headDim, float scale, int32_t kScale, int32_t vScale,
                  uint32_t window = 0, const std::string &layer = "",
                  bool lastRowOnly = false) {
    auto op = fa::CreateAttention(fbb_, &q, &out, cache, slot, heads, kvHeads,
                                  headDim, scale, window, kScale, vScale);
    return command(fa::Op::Attention, op.Union(), layer, lastRowOnly);
  }
  flatbuffers::Offset<fa::Arg> bufferArg(fa::BufferRef b) {
    return fa::CreateArg(fbb_, fa::ArgKind::Buffer, &b);
  }
  flatbuffers::Offset<fa::Arg> weightArg(uint32_t index) {
    return fa::CreateArg(fbb_, fa::ArgKind::Weight, nullptr, index);
  }
  flatbuffers::Offset<fa::Arg> cacheArg(fa::ArgKind kind, uint32_t cache,
                                        uint32_t slot) {
    return fa::CreateArg(fbb_, kind, nullptr, cache, slot);
  }
  Cmd dispatch(uint32_t function,
               const std::vector<flatbuffers::Offset<fa::Arg>> &args,
               const std::string &layer = "", bool lastRowOnly = false) {
    auto op = fa::CreateDispatchDirect(fbb_, function, &args);
    return command(fa::Op::Dispatch, op.Union(), layer, lastRowOnly);
  }
  Cmd copyLastRow(fa::BufferRef src, fa::BufferRef dst,
                  const std::string &layer = "") {
    auto op = fa::CreateCopyLastRow(fbb_, &src, &dst);
    return command(fa::Op::CopyLastRow, op.Union(), layer, false);
  }
  Cmd vitAttention(fa::BufferRef qkv, fa::BufferRef out, uint32_t registers,
                   uint32_t gridH, uint32_t gridW, uint32_t heads,
                   uint32_t headDim, float scale, uint32_t window,
                   const std::string &layer = "") {
    auto op = fa::CreateVitAttention(fbb_, &qkv, &out, registers, gridH, gridW,
                                     heads, headDim, scale, window);
    return command(fa::Op::VitAttention, op.Union(), layer, false);
  }
  using SharedExpert = fm::test::SharedExpert;
  Cmd moe(fa::BufferRef x, fa::BufferRef y, uint32_t router,
          const std::vector<uint32_t> &gate, const std::vector<uint32_t> &up,
          const std::vector<uint32_t> &down, uint32_t topK, bool normTopk,
          bool accumulate = false, SharedExpert shared = {},
          const std::string &layer = "", bool lastRowOnly = false) {
    auto op = fa::CreateMoeDirect(fbb_, &x, &y, router, &gate, &up, &down, topK,
                                  normTopk, accumulate, shared.gate, shared.up,
                                  shared.down, shared.expertGate);
    return command(fa::Op::Moe, op.Union(), layer, lastRowOnly);
  }
  /// An in-place AllReduce of `buffer` (its one input is its out).
  Cmd allReduce(fa::BufferRef buffer, float scale,
                const std::string &layer = "", bool lastRowOnly = false) {
    return allReduceOf({buffer}, {}, buffer, scale, layer, lastRowOnly);
  }
  /// out = scale · Σ inputs (ranks: per input, or empty for all -1).
  Cmd allReduceOf(const std::vector<fa::BufferRef> &inputs,
                  const std::vector<int32_t> &ranks, fa::BufferRef out,
                  float scale, const std::string &layer = "",
                  bool lastRowOnly = false) {
    auto in = fbb_.CreateVectorOfStructs(inputs);
    auto rk = ranks.empty() ? 0 : fbb_.CreateVector(ranks);
    auto op = fa::CreateAllReduce(fbb_, in, rk, &out, scale);
    return command(fa::Op::AllReduce, op.Union(), layer, lastRowOnly);
  }
  /// A command with op type NONE (or any raw type) and an Embed body.
  Cmd rawCommand(fa::Op type) {
    fa::BufferRef out = buf(0, 1, 1);
    auto op = fa::CreateEmbed(fbb_, 0, &out);
    return command(type, op.Union(), "", false);
  }

  /// A program whose arena holds `arenaFloats` floats.
  void addProgram(const std::string &phase, uint32_t maxRows,
                  uint64_t arenaFloats, fa::BufferRef logits,
                  bool logitsLastRowOnly, const std::vector<Cmd> &commands) {
    programs_.push_back(fa::CreateProgramDirect(fbb_, phase.c_str(), maxRows,
                                                4 * arenaFloats, &logits,
                                                logitsLastRowOnly, &commands));
  }

  /// The CPU executable (functions without launch metadata).
  void setExecutable(const std::string &format, const std::string &triple,
                     const std::vector<std::string> &functions,
                     const std::vector<uint8_t> &image) {
    addExecutable("cpu", format, triple, functions, image);
  }
  /// An executable for `target`; `bindings` > 0 gives each function that
  /// many bindings (a GPU target's launch metadata).
  void addExecutable(const std::string &target, const std::string &format,
                     const std::string &triple,
                     const std::vector<std::string> &functions,
                     const std::vector<uint8_t> &image, uint32_t bindings = 0) {
    std::vector<flatbuffers::Offset<fa::Function>> fns;
    for (const std::string &f : functions) {
      std::vector<flatbuffers::Offset<fa::Binding>> bs;
      for (uint32_t i = 0; i < bindings; ++i)
        bs.push_back(fa::CreateBinding(fbb_, 0, i));
      std::vector<uint32_t> wg;
      if (bindings)
        wg = {64, 1, 1};
      fns.push_back(fa::CreateFunctionDirect(fbb_, f.c_str(), &wg, &bs));
    }
    executables_.push_back(fa::CreateExecutableDirect(
        fbb_, target.c_str(), format.c_str(), triple.c_str(), "generic",
        &image, &fns));
  }
  /// The bytes weight `index` was added with.
  const std::vector<uint8_t> &weightBytes(uint32_t index) const {
    return weights_[index].bytes;
  }
  /// Adds a variant of weight `index` for `target` in `layout` holding
  /// `bytes` (placed after the shared weights).
  void addVariant(uint32_t index, const std::string &target,
                  const std::string &layout, std::vector<uint8_t> bytes) {
    variants_.push_back({index, target, layout, std::move(bytes)});
  }

  /// The file bytes.
  std::vector<uint8_t> finish() {
    // Data section layout: the shared weights, then the variants.
    std::vector<uint8_t> data;
    std::vector<uint64_t> offsets;
    for (Weight &w : weights_) {
      data.resize(align(data.size() + w.gapBefore));
      offsets.push_back(data.size());
      data.insert(data.end(), w.bytes.begin(), w.bytes.end());
    }
    std::vector<std::vector<flatbuffers::Offset<fa::WeightVariant>>> variants(
        weights_.size());
    for (const Variant &v : variants_) {
      data.resize(align(data.size()));
      variants[v.index].push_back(fa::CreateWeightVariantDirect(
          fbb_, v.target.c_str(), v.layout.c_str(), data.size(), v.bytes.size()));
      data.insert(data.end(), v.bytes.begin(), v.bytes.end());
    }
    std::vector<flatbuffers::Offset<fa::Weight>> weights;
    for (size_t i = 0; i < weights_.size(); ++i) {
      const Weight &w = weights_[i];
      weights.push_back(fa::CreateWeightDirect(
          fbb_, w.name.c_str(), w.dtype, &w.shape,
          w.hasOffsetOverride ? w.offsetOverride : offsets[i],
          w.hasSizeOverride ? w.sizeOverride : w.bytes.size(), w.group, w.grid,
          variants[i].empty() ? nullptr : &variants[i]));
    }
    data.resize(align(data.size()));
    uint64_t dataSize =
        dataSizeOverride >= 0 ? uint64_t(dataSizeOverride) : data.size();
    fm::format::Digest weightsDigest =
        fm::format::digest(data.data(), data.size());
    if (corruptWeightsDigest)
      weightsDigest[0] ^= 1;
    fa::Digest zero,
        wd(flatbuffers::span<const uint8_t, 32>(weightsDigest.data(), 32));
    flatbuffers::Offset<fa::TokenizerFiles> tokenizer;
    if (!tokenizerJson.empty())
      tokenizer = fa::CreateTokenizerFilesDirect(
          fbb_, tokenizerJson.c_str(), tokenizerConfig.c_str(),
          "test/tokenizer.json", &stopIds);
    fbb_.ForceDefaults(true); // schema_version is stored even when default
    std::unique_ptr<fa::Digest> sd;
    if (sourceDigest.size() == 32)
      sd = std::make_unique<fa::Digest>(
          flatbuffers::span<const uint8_t, 32>(sourceDigest.data(), 32));
    auto root = fa::CreateArtifactDirect(
        fbb_, schemaVersion, family.c_str(), "test-model", "{}", vocab, hidden,
        layers, 1234, &weights, dataSize, &zero, &wd, &caches_, &programs_,
        &executables_, ranks, numTracks, numTrackBlocks, sd.get(), tokenizer);
    fa::FinishSizePrefixedArtifactBuffer(fbb_, root);
    std::vector<uint8_t> file(fbb_.GetBufferPointer(),
                              fbb_.GetBufferPointer() + fbb_.GetSize());
    file.resize(align(file.size()));
    // The program digest over everything before the data section, its own
    // bytes taken as zeros.
    const auto *art = fa::GetSizePrefixedArtifact(file.data());
    const size_t at =
        reinterpret_cast<const uint8_t *>(art->program_digest()) - file.data();
    fm::format::Digest pd = fm::format::programDigest(file.data(), file.size(), at);
    if (corruptProgramDigest)
      pd[0] ^= 1;
    std::copy(pd.begin(), pd.end(), file.begin() + at);
    file.insert(file.end(), data.begin(), data.end());
    return file;
  }

  /// Recomputes the program digest of a finished file after a test changed
  /// bytes before its data section (so that the loader reaches the check
  /// the change is meant to trip).
  static void resealProgram(std::vector<uint8_t> &file) {
    const auto *art = fa::GetSizePrefixedArtifact(file.data());
    const size_t at =
        reinterpret_cast<const uint8_t *>(art->program_digest()) - file.data();
    const size_t head = std::min<size_t>(dataStart(file), file.size());
    fm::format::Digest pd = fm::format::programDigest(file.data(), head, at);
    std::copy(pd.begin(), pd.end(), file.begin() + at);
  }

  /// The file offset where the data section starts in `file`.
  static uint64_t dataStart(const std::vector<uint8_t> &file) {
    uint32_t n;
    std::memcpy(&n, file.data(), 4);
    return align(4 + uint64_t(n));
  }

private:
  struct Weight {
    std::string name;
    std::vector<int64_t> shape;
    fa::DType dtype = fa::DType::F32;
    std::vector<uint8_t> bytes;
    uint32_t group = 0;
    fa::QuantGrid grid = fa::QuantGrid::Balanced;
    uint64_t gapBefore = 0;
    uint64_t offsetOverride = 0, sizeOverride = 0;
    bool hasOffsetOverride = false, hasSizeOverride = false;
  };

  static uint64_t align(uint64_t x) { return (x + 63) & ~uint64_t(63); }

  Cmd command(fa::Op type, flatbuffers::Offset<void> op,
              const std::string &layer, bool lastRowOnly) {
    auto layerOffset = layer.empty() ? 0 : fbb_.CreateString(layer);
    fa::CommandBuilder b(fbb_);
    b.add_op_type(type);
    b.add_op(op);
    if (!layer.empty())
      b.add_layer(layerOffset);
    b.add_last_row_only(lastRowOnly);
    b.add_block(placement.block);
    b.add_track(placement.track);
    b.add_rank(placement.rank);
    return b.Finish();
  }

  flatbuffers::FlatBufferBuilder fbb_;
  std::vector<Weight> weights_;
  uint64_t pendingGap_ = 0;
  std::vector<flatbuffers::Offset<fa::KvCache>> caches_;
  std::vector<flatbuffers::Offset<fa::Program>> programs_;
  std::vector<flatbuffers::Offset<fa::Executable>> executables_;
  struct Variant {
    uint32_t index;
    std::string target, layout;
    std::vector<uint8_t> bytes;
  };
  std::vector<Variant> variants_;

};

/// The test kernels' shared object (built next to the test), as bytes.
inline std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in),
                              std::istreambuf_iterator<char>());
}

} // namespace fm::test
