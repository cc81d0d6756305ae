// The check of an artifact's ELF shared object before the dynamic loader
// sees it: everything ld.so and dlsym read must lie inside the image and be
// of the kinds fmc's linker writes, so that a corrupt image is refused with
// a sentence, never mapped into a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fm::hal {

/// Why `image` is not code for this machine (not ELF, another class, byte
/// order or architecture, not a shared object), or empty.
std::string elfMachineProblem(const uint8_t *image, size_t size);

/// Why `image` (`size` bytes, code for this machine: elfMachineProblem is
/// empty) cannot be dlopen'ed safely, or empty. Checks, in order: the
/// header (version, OS ABI, well-sized header tables); every program header (known types only; PT_LOAD file ranges
/// inside the image, filesz <= memsz, sane alignment, ascending
/// non-overlapping address ranges, no segment both writable and
/// executable, no executable stack, no interpreter or TLS); every section
/// header inside the image; the dynamic section (inside a loaded segment,
/// known tags only, no library but the C runtime's, no RPATH/RUNPATH or
/// text relocations), and through it the string table, the symbol table
/// and the GNU/SysV hash tables (every bucket and chain inside them), the
/// relocations (known types of this machine, each writing inside a
/// writable segment, symbol indices in range) and the initializer arrays
/// (entries inside the image); finally each of `functions` is a defined
/// global function inside an executable segment that the symbol hash
/// lookup finds, as dlsym would.
std::string elfImageProblem(const uint8_t *image, size_t size,
                            const std::vector<std::string> &functions);

} // namespace fm::hal
