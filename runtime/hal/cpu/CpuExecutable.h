// Loads an artifact's generated CPU code (an ELF shared object held in the
// artifact) with fmc's own loader and resolves its functions.
#pragma once

#include "fm/fmb_generated.h"
#include "fm/status.h"
#include "hal/Device.h"
#include "hal/cpu/ElfLoader.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fm::hal {

/// The generated functions of one artifact, mapped by fmc's own loader
/// (hal/cpu/ElfLoader.h): no dlopen, nothing looked up in the process.
/// Nothing in the image runs at load time (initializers are refused); its
/// functions run when the executor calls them: an artifact is a program,
/// and only trusted artifacts should be loaded with their executable.
class CpuExecutable final : public Executable {
public:
  /// The calling convention of every generated function (schema: Dispatch).
  using Function = void (*)(void **args, int64_t rows, int64_t pos);

  /// Loads `exe` (format "elf-so", for this machine) from memory: checked
  /// (hal/cpu/ElfImage.h), mapped, relocated against the runtime's import
  /// table (defaultElfImports) and protected; or finds `exe` (format
  /// "static") among the kernels linked into this program
  /// (hal/cpu/StaticKernels.h). `artifactName` starts the error messages.
  static Expected<std::unique_ptr<CpuExecutable>>
  load(const fm::artifact::Executable &exe, const std::string &artifactName);
  /// The same from an image's bytes and its function names; `what` starts
  /// the messages.
  static Expected<std::unique_ptr<CpuExecutable>>
  loadImage(const std::vector<uint8_t> &image,
            const std::vector<std::string> &functions, const std::string &what);

  ~CpuExecutable() override = default;
  CpuExecutable(const CpuExecutable &) = delete;
  CpuExecutable &operator=(const CpuExecutable &) = delete;

  size_t numFunctions() const override { return functions_.size(); }
  Function function(size_t index) const { return functions_[index]; }

private:
  CpuExecutable() = default;

  LoadedElf image_;
  std::vector<Function> functions_;
};

} // namespace fm::hal
