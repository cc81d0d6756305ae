// SPIR-V executables (VulkanExecutable.h).
#include "hal/vulkan/VulkanExecutable.h"

#include <cstring>

namespace fm::hal::vk {

Expected<std::unique_ptr<VulkanExecutable>>
VulkanExecutable::load(std::shared_ptr<VulkanContext> ctx,
                       const fm::artifact::Executable &exe,
                       const std::string &artifactName) {
  const std::string where = artifactName + ": vulkan executable: ";
  if (exe.format()->str() != "spirv")
    return Status::error(where + "format '" + exe.format()->str() +
                         "' (this device loads 'spirv')");
  const auto *data = exe.data();
  constexpr uint32_t kMagic = 0x07230203;
  uint32_t magic = 0;
  if (data->size() >= 4)
    std::memcpy(&magic, data->data(), 4);
  if (data->size() % 4 != 0 || data->size() < 20 || magic != kMagic)
    return Status::error(where + "the image is not a SPIR-V module (" +
                         std::to_string(data->size()) + " bytes)");
  std::vector<uint32_t> words(data->size() / 4);
  std::memcpy(words.data(), data->data(), data->size());

  std::unique_ptr<VulkanExecutable> e(new VulkanExecutable(ctx));
  auto module = createShaderModule(*ctx, words.data(), words.size());
  if (!module)
    return Status::error(where + module.message());
  e->module_ = *module;
  const auto *fns = exe.functions();
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
                             "); this device binds argument i at (0, i)");
    }
    uint32_t pushBytes = 0;
    if (fn.push_constants())
      for (const auto *pc : *fn.push_constants()) {
        const std::string name = pc->name()->str();
        if (pc->size() != 4 || pc->offset() % 4 != 0 ||
            pc->offset() / 4 != f.push.size())
          return Status::error(at + "push constant '" + name +
                               "' is not the next 4-byte word");
        if (name == "rows") {
          f.push.push_back({Function::Push::Rows, 0});
        } else if (name == "pos") {
          f.push.push_back({Function::Push::Pos, 0});
        } else if (name.rfind("offset.", 0) == 0) {
          const uint32_t arg = uint32_t(std::strtoul(name.c_str() + 7, nullptr, 10));
          if (arg >= bindings || name != "offset." + std::to_string(arg))
            return Status::error(at + "push constant '" + name +
                                 "' names no argument");
          f.push.push_back({Function::Push::Offset, arg});
        } else {
          return Status::error(at + "unknown push constant '" + name + "'");
        }
        pushBytes = pc->offset() + pc->size();
      }
    if (Status s = checkStorageBuffers(*ctx, bindings, "'" + f.name + "'"); !s)
      return Status::error(at + s.message());
    auto p = createPipeline(*ctx, e->module_, f.name.c_str(), bindings, pushBytes, {});
    if (!p)
      return Status::error(at + p.message());
    f.pipeline = *p;
    e->functions_.push_back(std::move(f));
  }
  return e;
}

VulkanExecutable::~VulkanExecutable() {
  for (Function &f : functions_)
    destroyPipeline(*ctx_, f.pipeline);
  if (module_)
    vkDestroyShaderModule(ctx_->device(), module_, nullptr);
}

} // namespace fm::hal::vk
