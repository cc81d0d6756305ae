// MSL executables (MetalExecutable.h).
#include "hal/metal/MetalExecutable.h"

#include <cstdlib>
#include <cstring>

namespace fm::hal::mtl {

Expected<std::unique_ptr<MetalExecutable>>
MetalExecutable::load(const MetalContext &ctx, const fm::artifact::Executable &exe,
                      const std::string &artifactName) {
  const std::string where = artifactName + ": metal executable: ";
  if (exe.format()->str() != "msl")
    return Status::error(where + "format '" + exe.format()->str() +
                         "' (this device loads 'msl')");
  // The translation units, in function order.
  const auto *data = exe.data();
  std::vector<std::string> units;
  const char *bytes = reinterpret_cast<const char *>(data->data());
  for (size_t at = 0; at < data->size();) {
    const void *nul = std::memchr(bytes + at, 0, data->size() - at);
    if (!nul)
      return Status::error(where + "MSL unit " + std::to_string(units.size()) +
                           " (at byte " + std::to_string(at) + ") does not end with a NUL byte");
    const size_t end = size_t(static_cast<const char *>(nul) - bytes);
    units.emplace_back(bytes + at, end - at);
    at = end + 1;
  }
  const auto *fns = exe.functions();
  if (units.size() != fns->size())
    return Status::error(where + std::to_string(units.size()) + " MSL units for " +
                         std::to_string(fns->size()) + " functions");

  std::unique_ptr<MetalExecutable> e(new MetalExecutable());
  for (flatbuffers::uoffset_t i = 0; i < fns->size(); ++i) {
    const fm::artifact::Function &fn = *fns->Get(i);
    Function f;
    f.name = fn.name()->str();
    const std::string at = where + "function " + std::to_string(i) + " '" + f.name + "': ";
    const uint32_t bindings = fn.bindings() ? fn.bindings()->size() : 0;
    for (uint32_t b = 0; b < bindings; ++b) {
      const auto *binding = fn.bindings()->Get(b);
      if (binding->set() != 0 || binding->binding() != b)
        return Status::error(at + "argument " + std::to_string(b) + " is bound at (" +
                             std::to_string(binding->set()) + ", " +
                             std::to_string(binding->binding()) +
                             "); this device binds argument i at [[buffer(i)]]");
    }
    uint32_t pushBytes = 0;
    if (fn.push_constants())
      for (const auto *pc : *fn.push_constants()) {
        const std::string name = pc->name()->str();
        if (pc->size() != 4 || pc->offset() % 4 != 0 || pc->offset() / 4 != f.push.size())
          return Status::error(at + "push constant '" + name + "' is not the next 4-byte word");
        if (name == "rows") {
          f.push.push_back({Function::Push::Rows, 0});
        } else if (name == "pos") {
          f.push.push_back({Function::Push::Pos, 0});
        } else if (name.rfind("offset.", 0) == 0) {
          const uint32_t arg = uint32_t(std::strtoul(name.c_str() + 7, nullptr, 10));
          if (arg >= bindings || name != "offset." + std::to_string(arg))
            return Status::error(at + "push constant '" + name + "' names no argument");
          f.push.push_back({Function::Push::Offset, arg});
        } else {
          return Status::error(at + "unknown push constant '" + name + "'");
        }
        pushBytes = pc->offset() + pc->size();
      }
    const auto *wg = fn.workgroup_size();
    if (!wg || wg->size() != 3)
      return Status::error(at + "no workgroup_size [x, y, z] (the threadgroup size)");
    const uint32_t threads[3] = {wg->Get(0), wg->Get(1), wg->Get(2)};
    auto p = createPipeline(ctx, units[i], f.name, threads, bindings, pushBytes, {},
                            artifactName + "'s metal function " + std::to_string(i));
    if (!p)
      return Status::error(at + p.message());
    f.pipeline = std::move(*p);
    e->functions_.push_back(std::move(f));
  }
  return e;
}

} // namespace fm::hal::mtl
