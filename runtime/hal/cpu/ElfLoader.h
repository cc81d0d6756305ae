// fmc's own loader for an artifact's generated CPU code: maps a checked ELF
// image (ElfImage.h) into memory of its own, applies its relocations (the
// four kinds fmc's linker writes for this machine: relative, absolute, GOT,
// PLT), binds every outside symbol from a fixed table the runtime passes in
// (nothing is looked up in the process), and leaves each page readable and
// either writable or executable, never both. No dlopen, no libc loader, no
// file: mmap and mprotect only, the same on Linux, Android and macOS (where
// it maps MAP_JIT memory on Apple silicon); iOS forbids code loading and
// Windows is no target yet (docs/devices.md).
#pragma once

#include "fm/status.h"
#include "hal/cpu/ElfImage.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fm::hal {

/// One function the generated code may call, by its symbol name.
struct ElfImport {
  const char *name;
  void *address;
};

/// The functions an artifact's generated code may import (what LLVM's
/// lowering calls: memcpy, memset, memmove, and libm's), each the
/// runtime's own wrapper so that no symbol of the process leaks in.
const std::vector<ElfImport> &defaultElfImports();

/// The names of `imports`, comma-separated (for messages).
std::string importNames(const std::vector<ElfImport> &imports);

class LoadedElf {
public:
  LoadedElf() = default;
  ~LoadedElf();
  LoadedElf(LoadedElf &&other) noexcept;
  LoadedElf &operator=(LoadedElf &&other) noexcept;
  LoadedElf(const LoadedElf &) = delete;
  LoadedElf &operator=(const LoadedElf &) = delete;

  /// Maps `image` (checked: `layout` is what elfImageProblem made of it),
  /// relocates it against `imports` and protects its pages. Errors start
  /// with `what` and name the symbol, relocation or system call.
  static Expected<LoadedElf> load(const uint8_t *image, size_t size,
                                  const ElfLayout &layout,
                                  const std::vector<ElfImport> &imports,
                                  const std::string &what);

  /// Where the image's address `vaddr` is mapped.
  void *at(uint64_t vaddr) const { return base_ + (vaddr - first_); }
  /// The whole mapping: the image's pages and the gaps between them.
  const void *mapping() const { return mapping_; }
  size_t mappedBytes() const { return size_; }

private:
  void release();
  uint8_t *base_ = nullptr; // the image's address `first_`
  uint64_t first_ = 0;
  uint8_t *mapping_ = nullptr;
  size_t size_ = 0;
};

} // namespace fm::hal
