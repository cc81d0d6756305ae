// The target registry and the target-independent helpers of Target.h.
#include "targets/Target.h"

#include "dialects/fm/IR/FmOps.h"
#include "dialects/fmk/IR/FmkDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cctype>
#include <mutex>

using namespace mlir;

namespace fm::target {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<Target>> targets;
};

Registry &registry() {
  static Registry r;
  return r;
}

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

std::string layerName(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc))
    return n.getName().str();
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      if (auto n = dyn_cast<NameLoc>(l))
        return n.getName().str();
  return "";
}

void TargetRegistry::add(std::unique_ptr<Target> target) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::string name = target->name().str();
  r.targets[name] = std::move(target);
}

const Target *TargetRegistry::lookup(llvm::StringRef name) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.targets.find(name.str());
  return it == r.targets.end() ? nullptr : it->second.get();
}

std::vector<std::string> TargetRegistry::names() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> out;
  for (const auto &[name, target] : r.targets)
    out.push_back(name);
  return out;
}

llvm::Expected<std::vector<const Target *>>
parseTargetList(llvm::StringRef list) {
  std::vector<const Target *> out;
  llvm::StringSet<> seen;
  llvm::SmallVector<llvm::StringRef> names;
  list.split(names, ',');
  auto known = [] { return llvm::join(TargetRegistry::names(), ", "); };
  for (llvm::StringRef name : names) {
    name = name.trim();
    if (name.empty())
      return error("--target '" + list + "': an empty target name (known: " +
                   llvm::Twine(known()) + ")");
    const Target *t = TargetRegistry::lookup(name);
    if (!t)
      return error("unknown target '" + name + "' (known: " +
                   llvm::Twine(known()) + ")");
    if (!seen.insert(name).second)
      return error("--target '" + list + "' names '" + name + "' twice");
    out.push_back(t);
  }
  return out;
}

std::vector<GroupArg> groupAbi(fmk::GroupOp group) {
  std::vector<GroupArg> abi;
  for (auto [i, in] : llvm::enumerate(group.getInputs()))
    if (!in.getType().isIndex())
      abi.push_back({GroupArg::Input, unsigned(i)});
  for (unsigned k = 0; k < group.getNumResults(); ++k)
    abi.push_back({GroupArg::Result, k});
  unsigned n = 0;
  group.getBody().walk([&](fmk::CacheWriteOp) { abi.push_back({GroupArg::Cache, n++}); });
  return abi;
}

std::string entrySymbol(fmk::GroupOp group) {
  std::string out = "fmk_";
  for (char c : group.getKernel())
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out + "_entry";
}

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

std::vector<std::string> kernelNames(ModuleOp module) {
  std::vector<std::string> out;
  llvm::StringSet<> seen;
  module.walk([&](fmk::GroupOp g) {
    if (seen.insert(g.getKernel()).second)
      out.push_back(g.getKernel().str());
  });
  return out;
}

llvm::Error checkMicroKernels(ModuleOp module, const Target &target) {
  std::string problem;
  module.walk([&](Operation *op) {
    if (!problem.empty() || !isa_and_nonnull<fmk::FmkDialect>(op->getDialect()) ||
        isa<fmk::GroupOp, fmk::YieldOp, fmk::TracksOp, fmk::DropRowsOp>(op) ||
        op->getParentOfType<fmk::GroupOp>())
      return;
    llvm::StringRef name = op->getName().getStringRef();
    if (target.providesMicroKernel(name))
      return;
    std::string layer = layerName(op->getLoc());
    problem = "target " + target.name().str() + " has no micro-kernel for " +
              name.str() + (layer.empty() ? "" : " (" + layer + ")");
  });
  if (!problem.empty())
    return error(problem);
  return llvm::Error::success();
}

} // namespace fm::target
