// Loads an artifact's generated CPU code (an ELF shared object held in the
// artifact) and resolves its functions.
#pragma once

#include "fm/fmb_generated.h"
#include "fm/status.h"
#include "hal/Device.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fm::hal {

/// The generated functions of one artifact. Loading runs the image's code
/// (its initializers, and later its functions): an artifact is a program,
/// and only trusted artifacts should be loaded with their executable.
class CpuExecutable final : public Executable {
public:
  /// The calling convention of every generated function (schema: Dispatch).
  using Function = void (*)(void **args, int64_t rows, int64_t pos);

  /// Loads `exe` (format "elf-so", for this machine) from memory: a memfd
  /// (or, where memfd is not available, an unlinked temporary file) that is
  /// dlopen'ed, and dlsym of every function name. `artifactName` starts the
  /// error messages.
  static Expected<std::unique_ptr<CpuExecutable>>
  load(const fm::artifact::Executable &exe, const std::string &artifactName);
  /// The same from an image's bytes and its function names, after the
  /// checks of hal/cpu/ElfImage.h; `what` starts the messages.
  static Expected<std::unique_ptr<CpuExecutable>>
  loadImage(const std::vector<uint8_t> &image,
            const std::vector<std::string> &functions, const std::string &what);

  ~CpuExecutable() override;
  CpuExecutable(const CpuExecutable &) = delete;
  CpuExecutable &operator=(const CpuExecutable &) = delete;

  size_t numFunctions() const override { return functions_.size(); }
  Function function(size_t index) const { return functions_[index]; }

private:
  CpuExecutable() = default;

  void *handle_ = nullptr;
  // Kept open while the library is loaded: dlopen identifies libraries by
  // path, and "/proc/self/fd/N" must not be reused by another image before
  // this one is closed.
  int fd_ = -1;
  // The same holds for the temporary file used where memfd is missing: it
  // is removed only after dlclose.
  std::string tempPath_;
  std::vector<Function> functions_;
};

} // namespace fm::hal
