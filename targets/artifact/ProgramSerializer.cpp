// The FlatBuffer of an artifact (ProgramSerializer.h).
#include "targets/artifact/ProgramSerializer.h"

#include "dialects/fm/IR/FmOps.h"
#include "dialects/fmk/IR/FmkDialect.h"
#include "targets/Target.h"

#include "fm/fmb_generated.h"
#include "fm/format.h"
#include "kernels/qgemm_layout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
namespace fa = ::fm::artifact;

namespace fm::writer {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

int64_t cols(Value v) { return cast<RankedTensorType>(v.getType()).getShape()[1]; }

bool isOneRow(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 2 && t.getShape()[0] == 1;
}

bool isActivation(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 2 && t.getElementType().isF32() &&
         !v.getDefiningOp<mlir::fm::ParamOp>();
}

fa::DType dtypeOf(const StoredWeight &w) {
  switch (w.kind) {
  case StoredWeight::Kind::F32:
    return fa::DType::F32;
  case StoredWeight::Kind::F16:
    return fa::DType::F16;
  case StoredWeight::Kind::Quant:
    return w.format.bits == 2   ? fa::DType::Q2
           : w.format.bits == 4 ? fa::DType::Q4
                                : fa::DType::Q8;
  }
  return fa::DType::F32;
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

/// Where a command runs: its track block, track and rank (-1: none).
struct Placement {
  int32_t block = -1, track = -1, rank = -1;
};

class Serializer {
public:
  Serializer(ModuleOp module, const WeightPlan &plan,
             const std::vector<target::SerializedExecutable> &executables,
             const TokenizerFiles *tokenizer)
      : module_(module), plan_(plan), executables_(executables),
        tokenizer_(tokenizer) {}

  llvm::Expected<SerializedProgram> run();

private:
  uint32_t weightIndex(Value v) {
    return plan_.index.lookup(v.getDefiningOp<mlir::fm::ParamOp>().getKey());
  }
  /// The buffer fm-plan-memory gave `v`, in bytes.
  fa::BufferRef buffer(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      // An encode_image phase's image: one row of all its floats.
      auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
      auto off = fn->getAttrOfType<IntegerAttr>(fmk::FmkDialect::kImageBufferAttr);
      const int64_t n = cast<RankedTensorType>(v.getType()).getNumElements();
      return fa::BufferRef(4 * uint64_t(off ? off.getInt() : 0), uint32_t(4 * n),
                           uint32_t(n));
    }
    Operation *def = v.getDefiningOp();
    auto offs = def->getAttrOfType<DenseI64ArrayAttr>(fmk::FmkDialect::kBuffersAttr);
    const unsigned n = cast<OpResult>(v).getResultNumber();
    const int64_t w = cols(v);
    return fa::BufferRef(4 * uint64_t(offs[n]), uint32_t(4 * w), uint32_t(w));
  }
  llvm::Expected<flatbuffers::Offset<fa::Program>> program(func::FuncOp fn);
  /// The command of `op`, or a null offset for ops that are none (params).
  llvm::Expected<flatbuffers::Offset<fa::Command>>
  command(Operation &op, const std::string &phase, bool multiRow,
          const Placement &at);
  /// The image command of `op` (encode_image), or a null offset.
  flatbuffers::Offset<void> visionCommand(Operation &op, fa::Op &kind);
  flatbuffers::Offset<fa::ImageInput> imageInput(func::FuncOp fn);
  int32_t optWeight(Value w) { return w ? (int32_t)weightIndex(w) : -1; }
  llvm::Error commands(Block &block, const std::string &phase, bool multiRow,
                       const Placement &at,
                       std::vector<flatbuffers::Offset<fa::Command>> &out);

  ModuleOp module_;
  const WeightPlan &plan_;
  const std::vector<target::SerializedExecutable> &executables_;
  const TokenizerFiles *tokenizer_;
  flatbuffers::FlatBufferBuilder fbb_{1 << 16};
  mlir::fm::ModelOp model_;
  llvm::StringMap<uint32_t> cacheIdx_, kernelIdx_;
  SerializedProgram out_;
};

llvm::Expected<flatbuffers::Offset<fa::Command>>
Serializer::command(Operation &op, const std::string &phase, bool multiRow,
                    const Placement &at) {
  auto &fbb = fbb_;
  flatbuffers::Offset<void> body;
  fa::Op kind = fa::Op::NONE;
  if (auto e = dyn_cast<fmk::EmbedOp>(op)) {
    auto outRef = buffer(e.getResult());
    body = fa::CreateEmbed(fbb, weightIndex(e.getTable()), &outRef).Union();
    kind = fa::Op::Embed;
  } else if (auto mm = dyn_cast<fmk::MatmulOp>(op)) {
    std::vector<uint32_t> ws;
    for (Value w : mm.getWeights())
      ws.push_back(weightIndex(w));
    auto x = buffer(mm.getInput()), y = buffer(mm.getResult());
    fa::Activation act = fa::Activation::None;
    if (auto a = mm.getActivation())
      act = *a == fmk::Activation::gelu_tanh    ? fa::Activation::GeluTanh
            : *a == fmk::Activation::quick_gelu ? fa::Activation::QuickGelu
                                                : fa::Activation::Gelu;
    body = fa::CreateMatMul(fbb, &x, fbb.CreateVector(ws), &y,
                            cols(mm.getInput()), cols(mm.getResult()),
                            bool(mm.getAcc()), optWeight(mm.getBias()), act)
               .Union();
    kind = fa::Op::MatMul;
  } else if (auto a = dyn_cast<fmk::AttentionOp>(op)) {
    auto q = buffer(a.getQ()), o = buffer(a.getResult());
    body = fa::CreateAttention(
               fbb, &q, &o, cacheIdx_.lookup(a.getCache()), a.getSlot(),
               a.getNumHeads(), a.getNumKvHeads(), a.getHeadDim(),
               (float)a.getScale().convertToDouble(), a.getWindow(),
               a.getKScale() ? (int32_t)weightIndex(a.getKScale()) : -1,
               a.getVScale() ? (int32_t)weightIndex(a.getVScale()) : -1)
               .Union();
    kind = fa::Op::Attention;
  } else if (auto g = dyn_cast<fmk::GroupOp>(op)) {
    SmallVector<fmk::CacheWriteOp> writes(
        g.getBody().front().getOps<fmk::CacheWriteOp>());
    std::vector<flatbuffers::Offset<fa::Arg>> args;
    for (const target::GroupArg &ga : target::groupAbi(g)) {
      if (ga.kind == target::GroupArg::Cache) {
        fmk::CacheWriteOp w = writes[ga.index];
        args.push_back(fa::CreateArg(
            fbb, w.getPart() == fmk::KvPart::k ? fa::ArgKind::CacheK
                                               : fa::ArgKind::CacheV,
            nullptr, cacheIdx_.lookup(w.getCache()), w.getSlot()));
        continue;
      }
      Value v = ga.kind == target::GroupArg::Input ? g.getInputs()[ga.index]
                                                : g.getResult(ga.index);
      if (v.getDefiningOp<mlir::fm::ParamOp>()) {
        args.push_back(
            fa::CreateArg(fbb, fa::ArgKind::Weight, nullptr, weightIndex(v)));
        continue;
      }
      fa::BufferRef ref = buffer(v);
      args.push_back(fa::CreateArg(fbb, fa::ArgKind::Buffer, &ref));
    }
    body = fa::CreateDispatch(fbb, kernelIdx_.lookup(g.getKernel()),
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
    std::vector<fa::BufferRef> inputs;
    for (Value p : ar.getPartials())
      inputs.push_back(buffer(p));
    std::vector<int32_t> ranks;
    if (auto r = ar.getRanksAttr())
      for (int64_t v : r.asArrayRef())
        ranks.push_back(int32_t(v));
    auto outRef = buffer(ar.getResult());
    body = fa::CreateAllReduce(fbb, fbb.CreateVectorOfStructs(inputs),
                               ranks.empty() ? 0 : fbb.CreateVector(ranks),
                               &outRef, (float)ar.getScale().convertToDouble())
               .Union();
    kind = fa::Op::AllReduce;
    ++out_.collectivesPerPhase[phase];
  } else if (auto t = dyn_cast<fmk::TakeLastOp>(op)) {
    auto src = buffer(t.getInput()), dst = buffer(t.getResult());
    body = fa::CreateCopyLastRow(fbb, &src, &dst).Union();
    kind = fa::Op::CopyLastRow;
  } else if (isa<mlir::fm::ParamOp, fmk::YieldOp, func::ReturnOp,
                 fmk::DropRowsOp>(op)) {
    // (A drop_rows view is planned inside its input's buffer: no command.)
    return flatbuffers::Offset<fa::Command>();
  } else if (flatbuffers::Offset<void> v = visionCommand(op, kind); !v.IsNull()) {
    body = v;
  } else {
    return error("phase '" + phase + "': cannot write op '" +
                 op.getName().getStringRef() +
                 "' (not lowered to the kernel level)");
  }
  // encode_image has static shapes: every command runs on the rows its
  // activations have, whatever the launch.
  uint32_t fixedRows = 0;
  if (phase == mlir::fm::ModelOp::kImagePhase) {
    for (Value v : llvm::concat<Value>(op.getResults(), op.getOperands()))
      if (isActivation(v)) {
        fixedRows = uint32_t(cast<RankedTensorType>(v.getType()).getShape()[0]);
        break;
      }
    multiRow = false;
  }
  // A command runs on the last row only when its activations have one row
  // inside a multi-row program (after fmk.take_last).
  bool lastOnly = false;
  if (multiRow && kind != fa::Op::CopyLastRow) {
    for (Value v : op.getOperands())
      lastOnly |= isActivation(v) && isOneRow(v);
    for (Value v : op.getResults())
      lastOnly |= isActivation(v) && isOneRow(v);
  }
  return fa::CreateCommand(fbb, kind, body,
                           fbb.CreateString(target::layerName(op.getLoc())), lastOnly,
                           at.block, at.track, at.rank, fixedRows);
}

flatbuffers::Offset<void> Serializer::visionCommand(Operation &op,
                                                    fa::Op &kind) {
  auto &fbb = fbb_;
  if (auto pe = dyn_cast<fmk::PatchEmbedOp>(op)) {
    auto img = cast<RankedTensorType>(pe.getImage().getType()).getShape();
    auto image = buffer(pe.getImage()), out = buffer(pe.getResult());
    kind = fa::Op::PatchEmbed;
    return fa::CreatePatchEmbed(fbb, &image, &out, img[0], img[1], img[2],
                                pe.getPatch(), weightIndex(pe.getWeight()),
                                weightIndex(pe.getBias()), optWeight(pe.getPos()),
                                optWeight(pe.getRegisters()))
        .Union();
  }
  if (auto ln = dyn_cast<fmk::LayerNormOp>(op)) {
    auto x = buffer(ln.getInput()), y = buffer(ln.getResult());
    kind = fa::Op::LayerNorm;
    return fa::CreateLayerNorm(fbb, &x, &y, weightIndex(ln.getWeight()),
                               weightIndex(ln.getBias()),
                               (float)ln.getEps().convertToDouble())
        .Union();
  }
  if (auto va = dyn_cast<fmk::VitAttentionOp>(op)) {
    auto qkv = buffer(va.getQkv()), out = buffer(va.getResult());
    kind = fa::Op::VitAttention;
    return fa::CreateVitAttention(
               fbb, &qkv, &out, va.getNumRegisters(), va.getGrid()[0],
               va.getGrid()[1], va.getNumHeads(), va.getHeadDim(),
               (float)va.getScale().convertToDouble(), va.getWindow(),
               optWeight(va.getRelPosH()), optWeight(va.getRelPosW()),
               optWeight(va.getPad()))
        .Union();
  }
  if (auto cv = dyn_cast<fmk::Conv3x3Op>(op)) {
    auto x = buffer(cv.getInput()), y = buffer(cv.getResult());
    kind = fa::Op::Conv3x3;
    return fa::CreateConv3x3(fbb, &x, &y, cv.getGrid()[0], cv.getGrid()[1],
                             weightIndex(cv.getWeight()), optWeight(cv.getBias()))
        .Union();
  }
  if (auto ap = dyn_cast<fmk::AvgPoolOp>(op)) {
    auto x = buffer(ap.getInput()), y = buffer(ap.getResult());
    kind = fa::Op::AvgPool;
    return fa::CreateAvgPool(fbb, &x, &y, ap.getGrid(), ap.getOutGrid()).Union();
  }
  return {};
}

flatbuffers::Offset<fa::ImageInput> Serializer::imageInput(func::FuncOp fn) {
  auto &fbb = fbb_;
  BlockArgument image = fn.getBody().front().getArgument(0);
  auto shape = cast<RankedTensorType>(image.getType()).getShape();
  fa::BufferRef ref = buffer(image);
  auto values = [&](std::optional<ArrayRef<double>> v) {
    return v ? fbb.CreateVector(v->data(), v->size())
             : flatbuffers::Offset<flatbuffers::Vector<double>>();
  };
  auto mean = values(model_.getImageMean());
  auto stdev = values(model_.getImageStd());
  const fa::Resample resample = model_.getImageResample() &&
                                        *model_.getImageResample() == "bilinear"
                                    ? fa::Resample::Bilinear
                                    : fa::Resample::Bicubic;
  return fa::CreateImageInput(fbb, &ref, shape[0], shape[1], shape[2], mean,
                              stdev, resample);
}

llvm::Error
Serializer::commands(Block &block, const std::string &phase, bool multiRow,
                     const Placement &at,
                     std::vector<flatbuffers::Offset<fa::Command>> &out) {
  for (Operation &op : block) {
    if (auto tracks = dyn_cast<fmk::TracksOp>(op)) {
      // A track block's commands are consecutive, track by track: one
      // section whose tracks a runtime may run concurrently.
      auto ranks = tracks.getRanksAttr();
      for (Region &r : tracks.getTracks()) {
        const unsigned t = r.getRegionNumber();
        Placement p{int32_t(tracks.getBlock()), int32_t(t),
                    ranks ? int32_t(ranks[t]) : -1};
        if (llvm::Error e = commands(r.front(), phase, multiRow, p, out))
          return e;
      }
      continue;
    }
    auto c = command(op, phase, multiRow, at);
    if (!c)
      return c.takeError();
    if (!c->IsNull())
      out.push_back(*c);
  }
  return llvm::Error::success();
}

llvm::Expected<flatbuffers::Offset<fa::Program>>
Serializer::program(func::FuncOp fn) {
  const std::string phase =
      fn->getAttrOfType<StringAttr>(mlir::fm::FmDialect::kPhaseAttrName).str();
  auto maxRows = fn->getAttrOfType<IntegerAttr>(fmk::FmkDialect::kMaxRowsAttr);
  auto arena = fn->getAttrOfType<IntegerAttr>(fmk::FmkDialect::kArenaAttr);
  if (!maxRows || !arena)
    return error("phase '" + phase + "' has no memory plan (run fm-plan-memory)");
  const bool multiRow = maxRows.getInt() > 1;
  const bool image = phase == mlir::fm::ModelOp::kImagePhase;
  std::vector<flatbuffers::Offset<fa::Command>> cmds;
  if (llvm::Error e = commands(fn.getBody().front(), phase, multiRow, {}, cmds))
    return std::move(e);
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  Value logits = ret.getNumOperands() ? ret.getOperand(0) : Value();
  if (!logits || !logits.getDefiningOp())
    return error("phase '" + phase + "' returns no logits");
  out_.commandsPerPhase[phase] = cmds.size();
  out_.arenaBytes = std::max<uint64_t>(out_.arenaBytes, 4 * arena.getInt());
  auto logitsRef = buffer(logits);
  auto input = image ? imageInput(fn) : flatbuffers::Offset<fa::ImageInput>();
  auto phaseName = fbb_.CreateString(phase);
  auto commandList = fbb_.CreateVector(cmds);
  return fa::CreateProgram(fbb_, phaseName, maxRows.getInt(),
                           4 * uint64_t(arena.getInt()), &logitsRef,
                           !image && multiRow && isOneRow(logits), commandList,
                           input);
}

llvm::Expected<SerializedProgram> Serializer::run() {
  for (auto m : module_.getOps<mlir::fm::ModelOp>())
    model_ = m;
  if (!model_)
    return error("the module has no fm.model");
  for (auto [i, c] :
       llvm::enumerate(model_.getBodyBlock().getOps<mlir::fm::KvCacheOp>()))
    cacheIdx_[c.getSymName()] = i;
  // The function list every executable exports: the distinct kernels.
  const std::vector<std::string> kernels = target::kernelNames(module_);
  for (auto [i, k] : llvm::enumerate(kernels))
    kernelIdx_[k] = i;
  if (!kernels.empty() && executables_.empty())
    return error("the programs dispatch generated kernels but no target "
                 "compiled them");
  for (const target::SerializedExecutable &e : executables_) {
    if (e.entries.size() != kernels.size())
      return error("the " + e.target + " executable has " +
                   llvm::Twine(e.entries.size()) + " functions for " +
                   llvm::Twine(kernels.size()) + " kernels");
    for (size_t i = 0; i < e.entries.size(); ++i)
      if (e.entries[i].name != executables_.front().entries[i].name)
        return error("function " + llvm::Twine(i) + " of the " + e.target +
                     " executable is '" + e.entries[i].name + "' but the " +
                     executables_.front().target + " executable's is '" +
                     executables_.front().entries[i].name + "'");
  }

  auto &fbb = fbb_;
  std::vector<flatbuffers::Offset<fa::Weight>> wtab;
  for (const StoredWeight &w : plan_.weights) {
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fa::WeightVariant>>>
        variants;
    if (w.gemmBytes)
      variants = fbb.CreateVector({fa::CreateWeightVariant(
          fbb, fbb.CreateString("cpu"),
          fbb.CreateString(kernels::kPanel16LayoutName), w.gemmOffset,
          w.gemmBytes)});
    wtab.push_back(fa::CreateWeight(
        fbb, fbb.CreateString(w.key), dtypeOf(w), fbb.CreateVector(w.shape),
        w.offset, w.bytes,
        w.kind == StoredWeight::Kind::Quant ? uint32_t(w.format.group) : 0,
        w.kind == StoredWeight::Kind::Quant &&
                w.format.grid == kernels::QuantGrid::Affine
            ? fa::QuantGrid::Affine
            : fa::QuantGrid::Balanced,
        variants));
  }
  std::vector<flatbuffers::Offset<fa::KvCache>> caches;
  for (auto c : model_.getBodyBlock().getOps<mlir::fm::KvCacheOp>()) {
    const bool i8 = c.getElementType().isInteger(8);
    caches.push_back(fa::CreateKvCache(
        fbb, fbb.CreateString(c.getSymName().str()), c.getLayers(),
        c.getKvHeads(), c.getHeadDim(), c.getCapacity(),
        i8 ? fa::DType::I8 : fa::DType::F32));
    out_.kvBytesPerToken +=
        2ull * c.getLayers() * c.getKvHeads() * c.getHeadDim() * (i8 ? 1 : 4);
  }
  // Track structure.
  out_.ranks = model_.getNumRanks() ? unsigned(*model_.getNumRanks()) : 1;
  model_.walk([&](fmk::TracksOp t) {
    out_.numTrackBlocks = std::max<unsigned>(out_.numTrackBlocks, t.getBlock() + 1);
    out_.numTracks = std::max<unsigned>(out_.numTracks, t.getNumTracks());
  });
  std::vector<flatbuffers::Offset<fa::Program>> programs;
  for (auto fn : model_.getBodyBlock().getOps<func::FuncOp>()) {
    if (!fn->hasAttr(mlir::fm::FmDialect::kPhaseAttrName))
      continue;
    auto p = program(fn);
    if (!p)
      return p.takeError();
    programs.push_back(*p);
    if (fn->getAttrOfType<StringAttr>(mlir::fm::FmDialect::kPhaseAttrName) ==
        "decode") {
      unsigned layers = 0;
      fn.walk([&](fmk::AttentionOp) { ++layers; });
      out_.numLayers = out_.numTracks ? layers / out_.numTracks : layers;
    }
  }
  std::vector<flatbuffers::Offset<fa::Executable>> exes;
  for (const target::SerializedExecutable &e : executables_) {
    std::vector<flatbuffers::Offset<fa::Function>> fns;
    for (const target::EntryPoint &entry : e.entries) {
      std::vector<flatbuffers::Offset<fa::Binding>> bindings;
      for (const target::Binding &b : entry.bindings)
        bindings.push_back(fa::CreateBinding(
            fbb, b.set, b.binding,
            b.access == target::Binding::Access::Read    ? fa::BindingAccess::Read
            : b.access == target::Binding::Access::Write ? fa::BindingAccess::Write
                                                         : fa::BindingAccess::ReadWrite));
      std::vector<flatbuffers::Offset<fa::PushConstant>> pcs;
      for (const target::PushConstant &pc : entry.pushConstants)
        pcs.push_back(fa::CreatePushConstant(fbb, fbb.CreateString(pc.name),
                                             pc.offset, pc.size));
      fns.push_back(fa::CreateFunction(
          fbb, fbb.CreateString(entry.name),
          entry.workgroupSize.empty() ? 0 : fbb.CreateVector(entry.workgroupSize),
          bindings.empty() ? 0 : fbb.CreateVector(bindings),
          pcs.empty() ? 0 : fbb.CreateVector(pcs)));
    }
    exes.push_back(fa::CreateExecutable(
        fbb, fbb.CreateString(e.target), fbb.CreateString(e.format),
        fbb.CreateString(e.triple), fbb.CreateString(e.cpu),
        fbb.CreateVector(e.data), fbb.CreateVector(fns)));
  }
  flatbuffers::Offset<fa::TokenizerFiles> tokenizer;
  if (tokenizer_)
    tokenizer = fa::CreateTokenizerFiles(
        fbb, fbb.CreateString(tokenizer_->tokenizerJson),
        fbb.CreateString(tokenizer_->configJson),
        fbb.CreateString(tokenizer_->source),
        fbb.CreateVector(tokenizer_->stopIds));
  fbb.ForceDefaults(true); // schema_version and the digests are always stored
  const fa::Digest zero;
  auto root = fa::CreateArtifact(
      fbb, format::kSchemaVersion, fbb.CreateString(model_.getFamily().str()),
      fbb.CreateString(model_.getSymName().str()),
      fbb.CreateString(configJson(model_)), model_.getVocabSize(),
      model_.getHiddenSize(), out_.numLayers, plan_.parameters,
      fbb.CreateVector(wtab), plan_.dataSize, &zero, &zero,
      fbb.CreateVector(caches), fbb.CreateVector(programs),
      fbb.CreateVector(exes), out_.ranks, out_.numTracks, out_.numTrackBlocks,
      &zero, tokenizer,
      model_.getImageTokenIndex() ? int32_t(*model_.getImageTokenIndex()) : -1);
  fbb.FinishSizePrefixed(root, format::kFileIdentifier);

  out_.head.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  out_.head.resize(format::alignData(out_.head.size()), 0);
  const auto *art = fa::GetSizePrefixedArtifact(out_.head.data());
  out_.programDigestOffset =
      reinterpret_cast<const uint8_t *>(art->program_digest()) - out_.head.data();
  out_.weightsDigestOffset =
      reinterpret_cast<const uint8_t *>(art->weights_digest()) - out_.head.data();
  out_.sourceDigestOffset =
      reinterpret_cast<const uint8_t *>(art->source_digest()) - out_.head.data();
  return std::move(out_);
}

} // namespace

llvm::Expected<SerializedProgram>
serializeProgram(ModuleOp module, const WeightPlan &plan,
                 const std::vector<target::SerializedExecutable> &executables,
                 const TokenizerFiles *tokenizer) {
  return Serializer(module, plan, executables, tokenizer).run();
}

} // namespace fm::writer
