// The weight plan and stream (WeightStreamer.h). Quantized weights are packed
// with the runtime's own quantizer, so the compiler and the kernels agree on
// the format by construction.
#include "targets/artifact/WeightStreamer.h"

#include "dialects/fm/IR/FmOps.h"
#include "dialects/fmk/IR/FmkDialect.h"
#include "kernels/qgemm.h"
#include "kernels/quantize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstring>
#include <utility>

using namespace mlir;

namespace fm::writer {
namespace {

std::optional<kernels::QuantFormat> formatOf(mlir::fm::ParamOp p) {
  auto q = p.getQuantAttr();
  if (!q)
    return std::nullopt;
  kernels::QuantFormat f;
  f.bits = q.getBits();
  f.group = q.getGroup();
  f.grid = q.getGrid() == mlir::fm::QuantGrid::affine ? kernels::QuantGrid::Affine
                                                      : kernels::QuantGrid::Balanced;
  return f;
}

StoredWeight stored(mlir::fm::ParamOp p) {
  auto t = cast<RankedTensorType>(p.getType());
  StoredWeight w;
  w.key = p.getKey().str();
  w.shape.assign(t.getShape().begin(), t.getShape().end());
  if (auto f = formatOf(p)) {
    w.kind = StoredWeight::Kind::Quant;
    w.format = *f;
    w.bytes = uint64_t(t.getShape()[0]) * kernels::packedRowBytes(*f, t.getShape()[1]);
  } else if (p.getStorageAttr() && p.getStorageAttr().getValue().isF16()) {
    w.kind = StoredWeight::Kind::F16;
    w.bytes = 2 * uint64_t(t.getNumElements());
  } else {
    w.bytes = 4 * uint64_t(t.getNumElements());
  }
  return w;
}

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// BLAKE2b-256 of one source tensor: its name, dtype, shape and bytes as
/// the source serves them.
format::Digest sourceTensorDigest(const import::WeightSource &source,
                                  const import::TensorInfo &t) {
  format::Hasher h;
  h.update(t.name.data(), t.name.size() + 1);
  const char *dtype = import::dtypeName(t.dtype);
  h.update(dtype, std::strlen(dtype) + 1);
  const uint64_t rank = t.shape.size();
  h.update(&rank, sizeof(rank));
  h.update(t.shape.data(), t.shape.size() * sizeof(int64_t));
  llvm::ArrayRef<uint8_t> bytes = source.data(t);
  h.update(bytes.data(), bytes.size());
  return h.finish();
}

/// Whether `mm` may run on more than one row: in a program of several rows
/// (not after fmk.take_last) or in the image encoder (fixed rows). The LM
/// head of a program that returns every row's logits (scoring) does not
/// count: it is the largest matrix, and the runtime repacks it if such a
/// program ever runs.
bool multipliesSeveralRows(fmk::MatmulOp mm) {
  auto rows = cast<RankedTensorType>(mm.getInput().getType()).getShape()[0];
  if (rows == 1 || llvm::any_of(mm->getUsers(), [](Operation *user) {
        return isa<func::ReturnOp>(user);
      }))
    return false;
  auto fn = mm->getParentOfType<func::FuncOp>();
  if (!fn)
    return false;
  auto phase = fn->getAttrOfType<StringAttr>(mlir::fm::FmDialect::kPhaseAttrName);
  if (phase && phase.getValue() == mlir::fm::ModelOp::kImagePhase)
    return true;
  auto maxRows = fn->getAttrOfType<IntegerAttr>(fmk::FmkDialect::kMaxRowsAttr);
  return maxRows && maxRows.getInt() > 1;
}

} // namespace

WeightPlan planWeights(ModuleOp module, const WeightPlanOptions &options) {
  WeightPlan plan;
  // The packed weights a matmul of several rows multiplies.
  llvm::StringSet<> gemm;
  if (options.cpuGemmCopies)
    module.walk([&](fmk::MatmulOp mm) {
      if (multipliesSeveralRows(mm))
        for (Value w : mm.getWeights())
          if (auto p = w.getDefiningOp<mlir::fm::ParamOp>())
            gemm.insert(p.getKey());
    });
  module.walk([&](Operation *op) {
    for (Value v : op->getOperands()) {
      auto p = v.getDefiningOp<mlir::fm::ParamOp>();
      if (!p || plan.index.count(p.getKey()))
        continue;
      plan.index[p.getKey()] = uint32_t(plan.weights.size());
      StoredWeight w = stored(p);
      w.offset = plan.dataSize;
      plan.dataSize = format::alignData(plan.dataSize + w.bytes);
      plan.parameters += uint64_t(cast<RankedTensorType>(p.getType()).getNumElements());
      plan.weights.push_back(std::move(w));
    }
  });
  const uint64_t shared = plan.dataSize;
  for (StoredWeight &w : plan.weights) {
    if (w.kind != StoredWeight::Kind::Quant || !gemm.contains(w.key) ||
        !kernels::gemmLayoutProblem(kernels::GemmLayout::Panel16, w.format,
                                    w.shape[0], w.shape[1])
             .empty())
      continue;
    w.gemmOffset = plan.dataSize;
    w.gemmBytes = kernels::gemmPackedBytes(kernels::GemmLayout::Panel16,
                                           w.format, w.shape[0], w.shape[1]);
    plan.dataSize = format::alignData(plan.dataSize + w.gemmBytes);
    ++plan.gemmCopies;
  }
  plan.gemmBytes = plan.dataSize - shared;
  return plan;
}

llvm::Expected<StreamResult>
streamWeights(const WeightPlan &plan, const import::WeightSource &source,
              const std::function<llvm::Error(const void *, size_t)> &sink,
              const std::function<void(llvm::StringRef)> &progress,
              const DataReader &readBack) {
  StreamResult result;
  format::Hasher hash;
  std::vector<std::pair<std::string, format::Digest>> sources;
  std::vector<float> values;
  std::vector<uint8_t> packed;
  static const std::vector<uint8_t> zeros(format::kDataAlignment, 0);
  uint64_t written = 0;
  unsigned lastPct = 0;
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    const StoredWeight &w = plan.weights[i];
    const import::TensorInfo *t = source.lookup(w.key);
    if (!t)
      return error("weight '" + w.key + "' is not in " + source.description());
    uint64_t elements = 1;
    for (int64_t d : w.shape)
      elements *= uint64_t(d);
    if (t->numElements() != elements)
      return error("weight '" + w.key + "' changed shape since import (" +
                   import::formatShape(t->shape) + ", expected " +
                   import::formatShape(w.shape) + ")");
    sources.push_back({w.key, sourceTensorDigest(source, *t)});
    import::readF32(source, *t, values);
    const uint8_t *bytes = reinterpret_cast<const uint8_t *>(values.data());
    switch (w.kind) {
    case StoredWeight::Kind::F32:
      break;
    case StoredWeight::Kind::F16:
      packed.resize(2 * values.size());
      for (size_t e = 0; e < values.size(); ++e) {
        uint16_t h = kernels::floatToHalf(values[e]);
        std::memcpy(packed.data() + 2 * e, &h, 2);
      }
      bytes = packed.data();
      break;
    case StoredWeight::Kind::Quant: {
      const int64_t n = w.shape[0], k = w.shape[1];
      packed.assign(w.bytes, 0);
      kernels::QuantError err =
          kernels::quantizeRows(values.data(), n, k, w.format, packed.data());
      result.quantErrors.push_back({w.key, unsigned(w.format.bits),
                                    err.relativeRms(), err.sqError, err.sqSum,
                                    uint64_t(n) * uint64_t(k), w.bytes});
      bytes = packed.data();
      break;
    }
    }
    const uint64_t sharedEnd = plan.dataSize - plan.gemmBytes;
    const uint64_t end =
        i + 1 < plan.weights.size() ? plan.weights[i + 1].offset : sharedEnd;
    const uint64_t padding = end - w.offset - w.bytes;
    hash.update(bytes, w.bytes);
    hash.update(zeros.data(), padding);
    if (llvm::Error e = sink(bytes, w.bytes))
      return std::move(e);
    if (llvm::Error e = sink(zeros.data(), padding))
      return std::move(e);
    written += w.bytes + padding;
    const unsigned pct = plan.dataSize ? unsigned(100 * written / plan.dataSize) : 100;
    if (progress && plan.dataSize > (64u << 20) && pct / 10 != lastPct / 10)
      progress(llvm::formatv("writing weights {0}%", pct).str());
    lastPct = pct;
  }
  // The GEMM copies, repacked from the packed bytes just written.
  std::vector<uint8_t> rows, copy;
  for (const StoredWeight &w : plan.weights) {
    if (!w.gemmBytes)
      continue;
    if (!readBack)
      return error("weight '" + w.key + "': a GEMM copy needs the written data");
    rows.resize(w.bytes);
    if (llvm::Error e = readBack(w.offset, rows.data(), rows.size()))
      return std::move(e);
    copy.assign(w.gemmBytes, 0);
    kernels::repackForGemmPanels(kernels::GemmLayout::Panel16, w.format,
                                 w.shape[0], w.shape[1], rows.data(),
                                 copy.data(), 0,
                                 kernels::panelGeometry(w.format, w.shape[0],
                                                        w.shape[1])
                                     .panels);
    const uint64_t padding = format::alignData(w.gemmBytes) - w.gemmBytes;
    hash.update(copy.data(), copy.size());
    hash.update(zeros.data(), padding);
    if (llvm::Error e = sink(copy.data(), copy.size()))
      return std::move(e);
    if (llvm::Error e = sink(zeros.data(), padding))
      return std::move(e);
    written += w.gemmBytes + padding;
    const unsigned pct = unsigned(100 * written / plan.dataSize);
    if (progress && plan.dataSize > (64u << 20) && pct / 10 != lastPct / 10)
      progress(llvm::formatv("writing weights {0}% (CPU GEMM copies)", pct).str());
    lastPct = pct;
  }
  result.digest = hash.finish();
  // In name order, so that the digest does not depend on where the plan
  // put each tensor.
  std::sort(sources.begin(), sources.end());
  format::Hasher all;
  for (const auto &[key, digest] : sources) {
    all.update(key.data(), key.size() + 1);
    all.update(digest.data(), digest.size());
  }
  result.sourceDigest = all.finish();
  return result;
}

} // namespace fm::writer
