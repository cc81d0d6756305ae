// PTX executables and the Dispatch kernel (CudaExecutable.h).
#include "hal/cuda/CudaExecutable.h"

#include "hal/cuda/CudaDevice.h"

#include <cctype>
#include <cstring>

namespace fm::hal::cuda {
namespace {

std::string trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return s.substr(b, e - b);
}

/// 8 or 4 for a PTX parameter declaration ".param .u64 [.ptr ...] name", 0
/// for anything else.
uint32_t paramBytes(const std::string &decl) {
  if (decl.rfind(".param", 0) != 0)
    return 0;
  const std::string rest = trim(decl.substr(6));
  for (const char *t : {".u64", ".b64", ".s64", ".f64"})
    if (rest.rfind(t, 0) == 0)
      return 8;
  for (const char *t : {".u32", ".b32", ".s32", ".f32"})
    if (rest.rfind(t, 0) == 0)
      return 4;
  return 0;
}

} // namespace

Expected<std::vector<uint32_t>> ptxEntryParams(const std::string &ptx,
                                               const std::string &name) {
  // ".entry NAME(" with NAME whole (not a prefix of a longer name).
  const std::string key = ".entry " + name;
  size_t at = 0;
  while ((at = ptx.find(key, at)) != std::string::npos) {
    size_t p = at + key.size();
    while (p < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[p])))
      ++p;
    if (p < ptx.size() && ptx[p] == '(')
      break;
    at = p;
  }
  if (at == std::string::npos)
    return Status::error("the PTX has no .entry " + name);
  const size_t open = ptx.find('(', at), close = ptx.find(')', open);
  if (close == std::string::npos)
    return Status::error("the PTX's .entry " + name + " has no parameter list end");
  std::vector<uint32_t> sizes;
  const std::string list = ptx.substr(open + 1, close - open - 1);
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos)
      comma = list.size();
    const std::string decl = trim(list.substr(start, comma - start));
    if (!decl.empty()) {
      const uint32_t bytes = paramBytes(decl);
      if (!bytes)
        return Status::error("the PTX's .entry " + name + " has a parameter '" + decl +
                             "' of no 32- or 64-bit scalar type");
      sizes.push_back(bytes);
    }
    start = comma + 1;
  }
  return sizes;
}

Expected<std::vector<PtxFunction>> readPtxFunctions(const artifact::Executable &exe,
                                                    const std::string &artifactName) {
  const std::string where = artifactName + ": cuda executable: ";
  if (exe.format()->str() != "ptx")
    return Status::error(where + "format '" + exe.format()->str() +
                         "' (this device loads 'ptx')");
  const auto *data = exe.data();
  const std::string ptx(reinterpret_cast<const char *>(data->data()), data->size());
  if (ptx.find('\0') != std::string::npos || ptx.find(".version ") == std::string::npos ||
      ptx.find(".target ") == std::string::npos)
    return Status::error(where + "the image is not PTX text (" + std::to_string(ptx.size()) +
                         " bytes)");
  std::vector<PtxFunction> out;
  const auto *fns = exe.functions();
  for (flatbuffers::uoffset_t i = 0; i < fns->size(); ++i) {
    const artifact::Function &fn = *fns->Get(i);
    PtxFunction f;
    f.name = fn.name()->str();
    const std::string at = where + "function " + std::to_string(i) + " '" + f.name + "': ";
    const auto *wg = fn.workgroup_size();
    if (!wg || wg->size() != 3)
      return Status::error(at + "needs a workgroup_size [x, y, z]");
    uint64_t threads = 1;
    for (uint32_t d = 0; d < 3; ++d) {
      f.block[d] = wg->Get(d);
      threads *= f.block[d];
    }
    if (threads == 0 || threads > 1024)
      return Status::error(at + "workgroup of " + std::to_string(threads) +
                           " threads (a CUDA block has 1 to 1024)");
    f.buffers = fn.bindings() ? fn.bindings()->size() : 0;
    for (uint32_t b = 0; b < f.buffers; ++b) {
      const auto *binding = fn.bindings()->Get(b);
      if (binding->set() != 0 || binding->binding() != b)
        return Status::error(at + "argument " + std::to_string(b) + " is bound at (" +
                             std::to_string(binding->set()) + ", " +
                             std::to_string(binding->binding()) +
                             "); this device passes argument i as parameters of slot i");
    }
    if (fn.push_constants())
      for (const auto *pc : *fn.push_constants()) {
        const std::string name = pc->name()->str();
        if (pc->size() != 4 || pc->offset() != 4 * f.push.size())
          return Status::error(at + "push constant '" + name + "' is not the next 4-byte word");
        if (name == "rows")
          f.push.push_back(PtxFunction::Push::Rows);
        else if (name == "pos")
          f.push.push_back(PtxFunction::Push::Pos);
        else
          return Status::error(at + "unknown push constant '" + name +
                               "' (this device passes rows and pos)");
      }
    auto params = ptxEntryParams(ptx, f.name);
    if (!params)
      return Status::error(at + params.message());
    std::vector<uint32_t> expected(size_t(f.buffers) * kParamsPerBuffer, 8);
    expected.insert(expected.end(), f.push.size(), 4);
    if (*params != expected)
      return Status::error(at + "the PTX entry takes " + std::to_string(params->size()) +
                           " parameters, the metadata describes " +
                           std::to_string(expected.size()) + " (" + std::to_string(f.buffers) +
                           " buffers of " + std::to_string(kParamsPerBuffer) + ", " +
                           std::to_string(f.push.size()) + " 32-bit words)");
    out.push_back(std::move(f));
  }
  return out;
}

Expected<std::unique_ptr<CudaExecutable>>
CudaExecutable::load(const CudaDevice &device, const artifact::Executable &exe,
                     const std::string &artifactName) {
  auto functions = readPtxFunctions(exe, artifactName);
  if (!functions)
    return functions.status();
  const DriverApi &api = device.api();
  FM_RETURN_IF_ERROR(device.enter());
  // cuModuleLoadData takes NUL-terminated PTX.
  std::string ptx(reinterpret_cast<const char *>(exe.data()->data()), exe.data()->size());
  std::unique_ptr<CudaExecutable> e(new CudaExecutable(device));
  char log[8192] = {};
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log) - 1))};
  if (CUresult r = api.cuModuleLoadDataEx(&e->module_, ptx.c_str(), 2, options, values);
      r != CUDA_SUCCESS)
    return Status::error(artifactName + ": cuda executable: loading its PTX failed: " +
                         errorText(api, r) + (log[0] ? ": " : "") + log);
  e->functions_ = std::move(*functions);
  for (const PtxFunction &f : e->functions_) {
    CUfunction fn = nullptr;
    if (CUresult r = api.cuModuleGetFunction(&fn, e->module_, f.name.c_str());
        r != CUDA_SUCCESS)
      return Status::error(artifactName + ": cuda executable: no kernel '" + f.name +
                           "' in its PTX: " + errorText(api, r));
    e->handles_.push_back(fn);
  }
  return e;
}

CudaExecutable::~CudaExecutable() {
  if (module_ && device_.enter())
    device_.api().cuModuleUnload(module_);
}

namespace {

class DispatchKernel final : public Kernel {
public:
  DispatchKernel(const CudaExecutable &exe, uint32_t function)
      : fn_(exe.function(function)), handle_(exe.handle(function)) {}

  /// The descriptor of one argument: `elements` of `elementBytes` at
  /// `ptr` (its row 0).
  void addBuffer(CUdeviceptr ptr, uint64_t elements) {
    for (uint64_t v : {uint64_t(ptr), uint64_t(ptr), uint64_t(0), elements, uint64_t(1)})
      slots_.push_back(v);
  }
  void finish() { slots_.resize(slots_.size() + fn_.push.size(), 0); }

  Status run(Queue &queue, const Launch &l) const override {
    CudaQueue &q = static_cast<CudaQueue &>(queue);
    FM_RETURN_IF_ERROR(q.enter());
    const size_t first = size_t(fn_.buffers) * kParamsPerBuffer;
    for (size_t i = 0; i < fn_.push.size(); ++i) {
      const uint32_t word = uint32_t(fn_.push[i] == PtxFunction::Push::Rows ? l.rows : l.pos);
      slots_[first + i] = 0;
      std::memcpy(&slots_[first + i], &word, sizeof(word));
    }
    if (l.rows <= 0)
      return Status::ok();
    q.launch(handle_, {unsigned(l.rows)}, {fn_.block[0], fn_.block[1], fn_.block[2]},
             slots_.data(), int(slots_.size()));
    return Status::ok();
  }

private:
  const PtxFunction &fn_;
  CUfunction handle_;
  // The launch parameters (the queue's recorder copies them): a run
  // writes rows and pos into their slots.
  mutable std::vector<uint64_t> slots_;
};

} // namespace

// The device is not needed: a run records on the queue it is given.
Expected<std::unique_ptr<Kernel>> makeDispatchKernel(CudaDevice &, const DispatchDesc &d) {
  const auto *exe = static_cast<const CudaExecutable *>(d.executable);
  if (!exe || d.function >= exe->numFunctions())
    return Status::error("cuda: dispatch of function " + std::to_string(d.function) +
                         ", which the loaded executable does not have");
  const PtxFunction &fn = exe->function(d.function);
  if (fn.buffers != d.args.size())
    return Status::error("cuda: function '" + fn.name + "' takes " +
                         std::to_string(fn.buffers) + " buffers, the dispatch has " +
                         std::to_string(d.args.size()) + " arguments");
  auto k = std::make_unique<DispatchKernel>(*exe, d.function);
  for (size_t i = 0; i < d.args.size(); ++i) {
    const DispatchArg &a = d.args[i];
    switch (a.kind) {
    case DispatchArg::Kind::Buffer:
      // The kernels index [row][width] contiguously from row 0.
      if (d.maxRows > 1 && a.rows.stride != a.rows.width)
        return Status::error("cuda: argument " + std::to_string(i) + " of '" + fn.name +
                             "' has rows " + std::to_string(a.rows.stride) +
                             " floats apart for a width of " + std::to_string(a.rows.width));
      k->addBuffer(devicePtr(a.rows.buffer, a.rows.offset),
                   uint64_t(d.maxRows) * uint64_t(a.rows.width));
      break;
    case DispatchArg::Kind::Weight:
      k->addBuffer(devicePtr(a.weight.buffer, a.weight.offset), a.weight.bytes / 4);
      break;
    case DispatchArg::Kind::Cache:
      k->addBuffer(devicePtr(a.cache.buffer, a.cache.offset),
                   uint64_t(a.cache.capacity) * uint64_t(a.cache.width));
      break;
    }
  }
  k->finish();
  return std::unique_ptr<Kernel>(std::move(k));
}

} // namespace fm::hal::cuda
