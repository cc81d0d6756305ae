// Generated CPU code from an artifact: checked (ElfImage.h), then mapped by
// fmc's own loader (ElfLoader.h).
#include "hal/cpu/CpuExecutable.h"

#include "hal/cpu/ElfImage.h"
#include "hal/cpu/StaticKernels.h"

#include <string>

namespace fm::hal {

Expected<std::unique_ptr<CpuExecutable>>
CpuExecutable::load(const fm::artifact::Executable &exe,
                    const std::string &artifactName) {
  const std::string triple = exe.triple() ? exe.triple()->str() : "";
  const std::string format = exe.format()->str();
  std::vector<std::string> functions;
  for (const auto *f : *exe.functions())
    functions.push_back(f->name()->str());
  if (format == "static") { // linked into this program: the registry has them
    const std::string key(exe.data()->begin(), exe.data()->end());
    auto found = findStaticKernels(key, functions);
    if (!found)
      return Status::error(artifactName + ": executable for " + triple + ": " +
                           found.message());
    std::unique_ptr<CpuExecutable> result(new CpuExecutable());
    result->functions_ = std::move(*found);
    return result;
  }
  if (format != "elf-so")
    return Status::error(artifactName + ": executable for " + triple +
                         " cannot run on this machine (format '" + format +
                         "'; this runtime loads 'elf-so' and 'static')");
#if defined(__APPLE__) && defined(__aarch64__)
  // x18 is the platform's register on Apple's arm64: code compiled for
  // Linux may use it.
  if (triple.find("apple") == std::string::npos)
    return Status::error(artifactName + ": executable for " + triple +
                         " cannot run on Apple's arm64, whose x18 it may use: "
                         "compile with --cpu aarch64-apple");
#endif
  // Checked and loaded from one private copy: the artifact's bytes may be
  // a mapping of a file that changes under us.
  std::vector<uint8_t> image(exe.data()->begin(), exe.data()->end());
  return loadImage(image, functions,
                   artifactName + ": executable for " + triple);
}

Expected<std::unique_ptr<CpuExecutable>>
CpuExecutable::loadImage(const std::vector<uint8_t> &image,
                         const std::vector<std::string> &functions,
                         const std::string &what) {
  if (std::string problem = elfMachineProblem(image.data(), image.size());
      !problem.empty())
    return Status::error(what + " cannot run on this machine: " + problem);
  ElfLayout layout;
  if (std::string problem =
          elfImageProblem(image.data(), image.size(), functions, &layout);
      !problem.empty())
    return Status::error(what + " is corrupt: " + problem);
  Expected<LoadedElf> loaded = LoadedElf::load(image.data(), image.size(), layout,
                                               defaultElfImports(), what);
  if (!loaded)
    return loaded.status();
  std::unique_ptr<CpuExecutable> result(new CpuExecutable());
  result->image_ = std::move(*loaded);
  result->functions_.reserve(functions.size());
  for (uint64_t address : layout.functions)
    result->functions_.push_back(
        reinterpret_cast<Function>(result->image_.at(address)));
  return result;
}

} // namespace fm::hal
