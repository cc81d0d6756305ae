// The .fmb artifact writer (see ArtifactWriter.h and runtime/schema/fmb.fbs).
#include "targets/ArtifactWriter.h"

#include "dialects/fm/IR/FmOps.h"
#include "dialects/fmk/IR/FmkDialect.h"
#include "tools/fmc/import/SafeTensors.h"

#include "fm/fmb_generated.h"
#include "kernels/quantize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <optional>
#include <fcntl.h>
#include <unistd.h>

using namespace mlir;
namespace fa = ::fm::artifact;

namespace fm::target {
namespace {

constexpr uint64_t kAlign = 64;
uint64_t alignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

struct Fnv1a {
  uint64_t h = 14695981039346656037ull; // FNV-1a 64 offset basis
  void update(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      h ^= p[i];
      h *= 1099511628211ull;
    }
  }
};

float bf16ToF32(uint16_t v) {
  uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float f16ToF32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::string layerName(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc))
    return n.getName().str();
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      if (auto n = dyn_cast<NameLoc>(l))
        return n.getName().str();
  return "";
}

int64_t cols(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape()[1];
}
bool isOneRow(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 2 && t.getShape()[0] == 1;
}
bool isActivation(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 2 && t.getElementType().isF32() &&
         !v.getDefiningOp<mlir::fm::ParamOp>();
}

/// The packed format of a quantized parameter, if it has one.
std::optional<::fm::kernels::QuantFormat> formatOf(mlir::fm::ParamOp p) {
  auto q = p.getQuantAttr();
  if (!q)
    return std::nullopt;
  ::fm::kernels::QuantFormat f;
  f.bits = q.getBits();
  f.group = q.getGroup();
  f.grid = q.getGrid() == mlir::fm::QuantGrid::affine
               ? ::fm::kernels::QuantGrid::Affine
               : ::fm::kernels::QuantGrid::Balanced;
  return f;
}

uint64_t storedBytes(mlir::fm::ParamOp p) {
  auto t = cast<RankedTensorType>(p.getType());
  if (auto f = formatOf(p))
    return t.getShape()[0] * ::fm::kernels::packedRowBytes(*f, t.getShape()[1]);
  return 4 * t.getNumElements();
}

fa::DType storedType(mlir::fm::ParamOp p) {
  auto f = formatOf(p);
  if (!f)
    return fa::DType::F32;
  return f->bits == 2 ? fa::DType::Q2 : f->bits == 4 ? fa::DType::Q4 : fa::DType::Q8;
}

class Writer {
public:
  Writer(ModuleOp module, const cpu::CompiledExecutable &exe,
         const WriteOptions &options)
      : module(module), exe(exe), options(options) {}

  llvm::Expected<ArtifactSummary>
  write(const std::string &path,
        const std::function<void(llvm::StringRef)> &progress);

private:
  llvm::Error collect();
  uint32_t weightIndex(Value v) {
    return weightIdx.lookup(v.getDefiningOp<mlir::fm::ParamOp>().getKey());
  }
  fa::BufferRef buffer(Value v) {
    Operation *def = v.getDefiningOp();
    auto offs = def->getAttrOfType<DenseI64ArrayAttr>(fmk::FmkDialect::kBuffersAttr);
    unsigned n = cast<OpResult>(v).getResultNumber();
    int64_t w = cols(v);
    return fa::BufferRef(offs[n], w, w);
  }
  llvm::Expected<flatbuffers::Offset<fa::Program>> program(func::FuncOp fn);

  /// Bytes and dtype of a parameter as stored.
  uint64_t bytesOf(mlir::fm::ParamOp p) {
    if (halfKeys.contains(p.getKey()))
      return 2 * cast<RankedTensorType>(p.getType()).getNumElements();
    return storedBytes(p);
  }
  fa::DType typeOf(mlir::fm::ParamOp p) {
    return halfKeys.contains(p.getKey()) ? fa::DType::F16 : storedType(p);
  }

  ModuleOp module;
  const cpu::CompiledExecutable &exe;
  WriteOptions options;
  /// Parameters stored as f16 (WriteOptions::f16Weights).
  llvm::StringSet<> halfKeys;
  mlir::fm::ModelOp model;
  flatbuffers::FlatBufferBuilder fbb{1 << 16};
  // Weights in order of first use, so that stacked projections are adjacent.
  std::vector<mlir::fm::ParamOp> params;
  llvm::StringMap<uint32_t> weightIdx;
  std::vector<uint64_t> weightOffset, weightBytes;
  uint64_t dataSize = 0, parameters = 0;
  llvm::StringMap<uint32_t> cacheIdx;
  llvm::StringMap<uint32_t> kernelIdx;
  ArtifactSummary summary;
};

llvm::Error Writer::collect() {
  for (auto m : module.getOps<mlir::fm::ModelOp>())
    model = m;
  if (!model)
    return llvm::createStringError("the module has no fm.model");
  for (auto [i, c] : llvm::enumerate(model.getBodyBlock().getOps<mlir::fm::KvCacheOp>()))
    cacheIdx[c.getSymName()] = i;
  // Each group's kernel is exe.functions[i] for the i-th distinct kernel name.
  unsigned next = 0;
  model.walk([&](fmk::GroupOp g) {
    if (kernelIdx.try_emplace(g.getKernel(), next).second)
      ++next;
  });
  if (next != exe.functions.size())
    return llvm::createStringError(
        "the executable has %zu functions for %u kernels",
        exe.functions.size(), next);
  // Weights: in order of first use, including within stacked matmuls.
  model.walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (auto p = v.getDefiningOp<mlir::fm::ParamOp>())
        if (weightIdx.try_emplace(p.getKey(), params.size()).second)
          params.push_back(p);
  });
  if (options.f16Weights) {
    // Only weights that micro-kernels read (they convert f16 in registers);
    // generated kernels read norms etc. as f32.
    llvm::StringSet<> other;
    model.walk([&](Operation *op) {
      bool kernel = isa<fmk::MatmulOp, fmk::EmbedOp, fmk::MoeOp>(op);
      for (Value v : op->getOperands())
        if (auto p = v.getDefiningOp<mlir::fm::ParamOp>()) {
          bool weightOperand = kernel && !(isa<fmk::MatmulOp>(op) &&
                                           cast<fmk::MatmulOp>(op).getAcc() == v);
          if (weightOperand && !p.getQuantAttr() &&
              cast<RankedTensorType>(p.getType()).getRank() == 2)
            halfKeys.insert(p.getKey());
          else
            other.insert(p.getKey());
        }
    });
    for (auto &k : other)
      halfKeys.erase(k.getKey());
  }
  for (mlir::fm::ParamOp p : params) {
    auto t = cast<RankedTensorType>(p.getType());
    weightOffset.push_back(dataSize);
    weightBytes.push_back(bytesOf(p));
    dataSize = alignUp(dataSize + weightBytes.back());
    parameters += t.getNumElements();
  }
  return llvm::Error::success();
}

llvm::Expected<flatbuffers::Offset<fa::Program>>
Writer::program(func::FuncOp fn) {
  std::string phase =
      fn->getAttrOfType<StringAttr>(mlir::fm::FmDialect::kPhaseAttrName).str();
  auto maxRows = fn->getAttrOfType<IntegerAttr>(fmk::FmkDialect::kMaxRowsAttr);
  auto arena = fn->getAttrOfType<IntegerAttr>(fmk::FmkDialect::kArenaAttr);
  if (!maxRows || !arena)
    return llvm::createStringError("phase '%s' has no memory plan (run fm-plan-memory)",
                                   phase.c_str());
  bool multiRow = maxRows.getInt() > 1;
  std::vector<flatbuffers::Offset<fa::Command>> commands;
  auto lastRowOnly = [&](Operation *op) {
    if (!multiRow)
      return false;
    for (Value v : op->getOperands())
      if (isActivation(v) && isOneRow(v))
        return true;
    for (Value v : op->getResults())
      if (isActivation(v) && isOneRow(v))
        return true;
    return false;
  };
  Value logits;
  for (Operation &op : fn.getBody().front()) {
    flatbuffers::Offset<void> body;
    fa::Op kind = fa::Op::NONE;
    if (auto e = dyn_cast<fmk::EmbedOp>(op)) {
      auto out = buffer(e.getResult());
      body = fa::CreateEmbed(fbb, weightIndex(e.getTable()), &out).Union();
      kind = fa::Op::Embed;
    } else if (auto mm = dyn_cast<fmk::MatmulOp>(op)) {
      std::vector<uint32_t> ws;
      for (Value w : mm.getWeights())
        ws.push_back(weightIndex(w));
      auto x = buffer(mm.getInput()), y = buffer(mm.getResult());
      body = fa::CreateMatMul(fbb, &x, fbb.CreateVector(ws), &y,
                              cols(mm.getInput()), cols(mm.getResult()),
                              bool(mm.getAcc()))
                 .Union();
      kind = fa::Op::MatMul;
    } else if (auto a = dyn_cast<fmk::AttentionOp>(op)) {
      auto q = buffer(a.getQ()), out = buffer(a.getResult());
      body = fa::CreateAttention(fbb, &q, &out, cacheIdx.lookup(a.getCache()),
                                 a.getSlot(), a.getNumHeads(),
                                 a.getNumKvHeads(), a.getHeadDim(),
                                 (float)a.getScale().convertToDouble(),
                                 a.getWindow(),
                                 a.getKScale() ? (int32_t)weightIndex(a.getKScale()) : -1,
                                 a.getVScale() ? (int32_t)weightIndex(a.getVScale()) : -1)
                 .Union();
      kind = fa::Op::Attention;
    } else if (auto g = dyn_cast<fmk::GroupOp>(op)) {
      SmallVector<fmk::CacheWriteOp> writes(
          g.getBody().front().getOps<fmk::CacheWriteOp>());
      std::vector<flatbuffers::Offset<fa::Arg>> args;
      for (const cpu::GroupArg &ga : cpu::groupAbi(g)) {
        fa::ArgBuilder ab(fbb);
        fa::BufferRef ref;
        if (ga.kind == cpu::GroupArg::Input) {
          Value in = g.getInputs()[ga.index];
          if (in.getDefiningOp<mlir::fm::ParamOp>()) {
            fa::ArgBuilder wb(fbb);
            wb.add_kind(fa::ArgKind::Weight);
            wb.add_index(weightIndex(in));
            args.push_back(wb.Finish());
            continue;
          }
          ref = buffer(in);
        } else if (ga.kind == cpu::GroupArg::Result) {
          ref = buffer(g.getResult(ga.index));
        } else {
          fmk::CacheWriteOp w = writes[ga.index];
          fa::ArgBuilder cb(fbb);
          cb.add_kind(w.getPart() == fmk::KvPart::k ? fa::ArgKind::CacheK
                                                    : fa::ArgKind::CacheV);
          cb.add_index(cacheIdx.lookup(w.getCache()));
          cb.add_slot(w.getSlot());
          args.push_back(cb.Finish());
          continue;
        }
        fa::ArgBuilder bb(fbb);
        bb.add_kind(fa::ArgKind::Buffer);
        bb.add_buffer(&ref);
        args.push_back(bb.Finish());
      }
      body = fa::CreateDispatch(fbb, kernelIdx.lookup(g.getKernel()),
                                fbb.CreateVector(args))
                 .Union();
      kind = fa::Op::Dispatch;
    } else if (auto moe = dyn_cast<fmk::MoeOp>(op)) {
      auto idx = [&](ValueRange ws) {
        std::vector<uint32_t> v;
        for (Value w : ws)
          v.push_back(weightIndex(w));
        return fbb.CreateVector(v);
      };
      auto opt = [&](Value w) { return w ? (int32_t)weightIndex(w) : -1; };
      auto x = buffer(moe.getInput()), y = buffer(moe.getResult());
      auto gate = idx(moe.getGate()), up = idx(moe.getUp()),
           down = idx(moe.getDown());
      body = fa::CreateMoe(fbb, &x, &y, weightIndex(moe.getRouter()), gate, up,
                           down, moe.getTopK(), moe.getNormTopkProb(),
                           bool(moe.getAcc()), opt(moe.getSharedGate()),
                           opt(moe.getSharedUp()), opt(moe.getSharedDown()),
                           opt(moe.getSharedExpertGate()))
                 .Union();
      kind = fa::Op::Moe;
    } else if (auto ar = dyn_cast<fmk::AllReduceOp>(op)) {
      auto buf = buffer(ar.getResult());
      body = fa::CreateAllReduce(fbb, &buf,
                                 (float)ar.getScale().convertToDouble())
                 .Union();
      kind = fa::Op::AllReduce;
      ++summary.collectivesPerPhase[phase];
    } else if (auto t = dyn_cast<fmk::TakeLastOp>(op)) {
      auto src = buffer(t.getInput()), dst = buffer(t.getResult());
      body = fa::CreateCopyLastRow(fbb, &src, &dst).Union();
      kind = fa::Op::CopyLastRow;
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      logits = ret.getOperand(0);
      continue;
    } else if (isa<mlir::fm::ParamOp>(op)) {
      continue;
    } else {
      return llvm::createStringError("phase '%s': cannot write op '%s' (not "
                                     "lowered to the kernel level)",
                                     phase.c_str(),
                                     op.getName().getStringRef().str().c_str());
    }
    bool lastOnly = kind == fa::Op::CopyLastRow ? false : lastRowOnly(&op);
    int32_t blk = -1, track = -1, device = -1;
    if (auto tag = op.getAttrOfType<DenseI64ArrayAttr>(fmk::FmkDialect::kTrackAttr);
        tag && tag.size() == 3) {
      blk = tag[0];
      track = tag[1];
      device = tag[2];
    }
    commands.push_back(fa::CreateCommand(fbb, kind, body,
                                         fbb.CreateString(layerName(op.getLoc())),
                                         lastOnly, blk, track, device));
  }
  if (!logits || !logits.getDefiningOp())
    return llvm::createStringError("phase '%s' returns no logits", phase.c_str());
  summary.commandsPerPhase[phase] = commands.size();
  summary.arenaBytes = std::max<uint64_t>(summary.arenaBytes, 4 * arena.getInt());
  auto logitsRef = buffer(logits);
  return fa::CreateProgram(fbb, fbb.CreateString(phase), maxRows.getInt(),
                           arena.getInt(), &logitsRef,
                           multiRow && isOneRow(logits),
                           fbb.CreateVector(commands));
}

/// The checkpoint's config, reassembled as one JSON object.
std::string configJson(mlir::fm::ModelOp model) {
  std::string s = "{";
  if (auto cfg = model.getConfigAttr()) {
    bool first = true;
    for (NamedAttribute a : cfg) {
      if (!first)
        s += ", ";
      first = false;
      s += "\"" + a.getName().str() + "\": ";
      s += cast<StringAttr>(a.getValue()).str();
    }
  }
  return s + "}";
}

llvm::Expected<ArtifactSummary>
Writer::write(const std::string &path,
              const std::function<void(llvm::StringRef)> &progress) {
  if (llvm::Error e = collect())
    return std::move(e);
  if (!model.getWeights())
    return llvm::createStringError(
        "fm.model has no 'weights' directory to read the parameters from");
  std::string weightsDir = model.getWeights()->str();
  auto weights = import::WeightSet::openDirectory(weightsDir);
  if (!weights)
    return weights.takeError();

  // Weight table.
  std::vector<flatbuffers::Offset<fa::Weight>> wtab;
  for (auto [i, p] : llvm::enumerate(params)) {
    auto t = cast<RankedTensorType>(p.getType());
    std::vector<int64_t> shape(t.getShape().begin(), t.getShape().end());
    auto f = formatOf(p);
    wtab.push_back(fa::CreateWeight(
        fbb, fbb.CreateString(p.getKey().str()), typeOf(p),
        fbb.CreateVector(shape), weightOffset[i], weightBytes[i],
        f ? f->group : 0,
        f && f->grid == ::fm::kernels::QuantGrid::Affine ? fa::QuantGrid::Affine
                                                         : fa::QuantGrid::Balanced));
  }
  std::vector<flatbuffers::Offset<fa::KvCache>> caches;
  for (auto c : model.getBodyBlock().getOps<mlir::fm::KvCacheOp>()) {
    bool i8 = c.getElementType().isInteger(8);
    caches.push_back(fa::CreateKvCache(fbb, fbb.CreateString(c.getSymName().str()),
                                       c.getLayers(), c.getKvHeads(),
                                       c.getHeadDim(), c.getCapacity(),
                                       i8 ? fa::DType::I8 : fa::DType::F32));
    summary.kvBytesPerToken +=
        2ull * c.getLayers() * c.getKvHeads() * c.getHeadDim() * (i8 ? 1 : 4);
  }
  // Track structure, from the phases' track tags.
  uint32_t numDevices =
      model.getNumDevices() ? (uint32_t)*model.getNumDevices() : 1;
  uint32_t numTracks = 0, numTrackBlocks = 0;
  model.walk([&](Operation *op) {
    if (auto tag = op->getAttrOfType<DenseI64ArrayAttr>(fmk::FmkDialect::kTrackAttr);
        tag && tag.size() == 3 && tag[1] >= 0) {
      numTrackBlocks = std::max<uint32_t>(numTrackBlocks, tag[0] + 1);
      numTracks = std::max<uint32_t>(numTracks, tag[1] + 1);
    }
  });
  summary.numTracks = numTracks;
  summary.numTrackBlocks = numTrackBlocks;
  summary.devices = numDevices;
  std::vector<flatbuffers::Offset<fa::Program>> programs;
  for (auto fn : model.getBodyBlock().getOps<func::FuncOp>()) {
    if (!fn->hasAttr(mlir::fm::FmDialect::kPhaseAttrName))
      continue;
    auto p = program(fn);
    if (!p)
      return p.takeError();
    programs.push_back(*p);
    if (fn->getAttrOfType<StringAttr>(mlir::fm::FmDialect::kPhaseAttrName) == "decode") {
      unsigned layers = 0;
      fn.walk([&](fmk::AttentionOp) { ++layers; });
      summary.numLayers = numTracks ? layers / numTracks : layers;
    }
  }
  auto executable = fa::CreateExecutable(
      fbb, fbb.CreateString(exe.format), fbb.CreateString(exe.triple),
      fbb.CreateString(exe.cpu), fbb.CreateVectorOfStrings(exe.functions),
      fbb.CreateVector(exe.image));
  fbb.ForceDefaults(true); // content_hash must exist to be patched below
  auto root = fa::CreateArtifact(
      fbb, 1, fbb.CreateString(model.getFamily().str()),
      fbb.CreateString(model.getSymName().str()),
      fbb.CreateString(configJson(model)), model.getVocabSize(),
      model.getHiddenSize(), summary.numLayers, parameters,
      fbb.CreateString("cpu"), fbb.CreateVector(wtab), dataSize,
      /*content_hash=*/0, fbb.CreateVector(caches), fbb.CreateVector(programs),
      executable, numDevices, numTracks, numTrackBlocks);
  fbb.FinishSizePrefixed(root, fa::ArtifactIdentifier());

  // Temporary file next to the destination, renamed when complete.
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  if (fd < 0)
    return llvm::createStringError("cannot write %s: %s", tmp.c_str(),
                                   std::strerror(errno));
  auto fail = [&](const std::string &what) -> llvm::Error {
    ::close(fd);
    ::unlink(tmp.c_str());
    return llvm::createStringError("%s: %s", path.c_str(), what.c_str());
  };
  auto writeAll = [&](const void *p, size_t n) {
    const char *c = static_cast<const char *>(p);
    while (n) {
      ssize_t k = ::write(fd, c, n);
      if (k < 0) {
        if (errno == EINTR)
          continue;
        return false;
      }
      c += k;
      n -= k;
    }
    return true;
  };
  std::vector<uint8_t> head(fbb.GetBufferPointer(),
                            fbb.GetBufferPointer() + fbb.GetSize());
  uint64_t dataStart = alignUp(head.size());
  std::vector<uint8_t> pad(dataStart - head.size(), 0);
  if (!writeAll(head.data(), head.size()) || !writeAll(pad.data(), pad.size()))
    return fail("write failed");

  // Stream the weights, converted to f32, hashing the data section.
  Fnv1a hash;
  std::vector<float> buf;
  std::vector<uint8_t> packed;
  uint64_t written = 0;
  unsigned lastPct = 0;
  for (auto [i, p] : llvm::enumerate(params)) {
    const import::TensorInfo *t = weights->lookup(p.getKey());
    if (!t)
      return fail(("weight '" + p.getKey() + "' is not in " + weightsDir).str());
    auto type = cast<RankedTensorType>(p.getType());
    if ((int64_t)t->numElements() != type.getNumElements())
      return fail(("weight '" + p.getKey() + "' changed shape since import").str());
    llvm::ArrayRef<uint8_t> raw = weights->data(*t);
    buf.resize(t->numElements());
    for (uint64_t e = 0; e < t->numElements(); ++e) {
      switch (t->dtype) {
      case import::DType::F32:
        std::memcpy(&buf[e], raw.data() + 4 * e, 4);
        break;
      case import::DType::F16: {
        uint16_t h;
        std::memcpy(&h, raw.data() + 2 * e, 2);
        buf[e] = f16ToF32(h);
        break;
      }
      case import::DType::BF16: {
        uint16_t h;
        std::memcpy(&h, raw.data() + 2 * e, 2);
        buf[e] = bf16ToF32(h);
        break;
      }
      }
    }
    // Quantized weights are packed here, one tensor at a time.
    const uint8_t *bytesPtr = reinterpret_cast<const uint8_t *>(buf.data());
    uint64_t bytes = 4 * buf.size();
    if (auto f = formatOf(p)) {
      int64_t n = type.getShape()[0], k = type.getShape()[1];
      packed.assign(weightBytes[i], 0);
      ::fm::kernels::QuantError err =
          ::fm::kernels::quantizeRows(buf.data(), n, k, *f, packed.data());
      summary.quantErrors.push_back({p.getKey().str(), (unsigned)f->bits,
                                     err.relativeRms(), err.sqError, err.sqSum,
                                     (uint64_t)n * k, weightBytes[i]});
      summary.quantizedElements += (uint64_t)n * k;
      summary.quantizedBytes += weightBytes[i];
      summary.quantSqError += err.sqError;
      summary.quantSqSum += err.sqSum;
      bytesPtr = packed.data();
      bytes = weightBytes[i];
    } else if (halfKeys.contains(p.getKey())) {
      packed.resize(2 * buf.size());
      for (size_t e = 0; e < buf.size(); ++e) {
        uint16_t h = ::fm::kernels::floatToHalf(buf[e]);
        std::memcpy(packed.data() + 2 * e, &h, 2);
      }
      bytesPtr = packed.data();
      bytes = packed.size();
    }
    uint64_t padTo = (i + 1 < params.size() ? weightOffset[i + 1] : dataSize);
    std::vector<uint8_t> zeros(padTo - weightOffset[i] - bytes, 0);
    hash.update(bytesPtr, bytes);
    hash.update(zeros.data(), zeros.size());
    if (!writeAll(bytesPtr, bytes) || !writeAll(zeros.data(), zeros.size()))
      return fail("write failed");
    written += bytes + zeros.size();
    unsigned pct = dataSize ? unsigned(100 * written / dataSize) : 100;
    if (progress && dataSize > (64u << 20) && pct / 10 != lastPct / 10)
      progress(llvm::formatv("writing weights {0}%", pct).str());
    lastPct = pct;
  }

  // Patch the content hash into the FlatBuffer (the field was forced present).
  auto *art = const_cast<fa::Artifact *>(
      fa::GetSizePrefixedArtifact(head.data()));
  reinterpret_cast<flatbuffers::Table *>(art)->SetField<uint64_t>(
      fa::Artifact::VT_CONTENT_HASH, hash.h, 0);
  if (::pwrite(fd, head.data(), head.size(), 0) != (ssize_t)head.size())
    return fail("write failed");
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return llvm::createStringError("%s: cannot complete the write", path.c_str());
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path)) {
    ::unlink(tmp.c_str());
    return llvm::createStringError("cannot rename %s to %s: %s", tmp.c_str(),
                                   path.c_str(), ec.message().c_str());
  }
  summary.artifactBytes = dataStart + dataSize;
  summary.weightBytes = dataSize;
  summary.parameters = parameters;
  summary.numWeights = params.size();
  summary.numKernels = exe.functions.size();
  return summary;
}

} // namespace

OwningOpRef<ModuleOp> uniqueKernels(ModuleOp module) {
  OpBuilder b(module.getContext());
  OwningOpRef<ModuleOp> out = ModuleOp::create(module.getLoc());
  b.setInsertionPointToEnd(out->getBody());
  llvm::StringSet<> seen;
  // Each distinct kernel once, as the body of a function whose arguments
  // stand for the group's operands (so the module verifies on its own).
  module.walk([&](fmk::GroupOp g) {
    if (!seen.insert(g.getKernel()).second)
      return;
    OpBuilder::InsertionGuard guard(b);
    auto fn = func::FuncOp::create(
        b, g.getLoc(), ("kernel_" + g.getKernel()).str(),
        b.getFunctionType(g.getInputs().getTypes(), {}));
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    IRMapping map;
    for (auto [in, arg] : llvm::zip(g.getInputs(), entry->getArguments()))
      map.map(in, arg);
    b.clone(*g, map);
    func::ReturnOp::create(b, g.getLoc());
  });
  return out;
}

llvm::Expected<ArtifactSummary>
writeArtifact(ModuleOp module, const cpu::CompiledExecutable &exe,
              const std::string &path,
              const std::function<void(llvm::StringRef)> &progress,
              const WriteOptions &options) {
  return Writer(module, exe, options).write(path, progress);
}

} // namespace fm::target
