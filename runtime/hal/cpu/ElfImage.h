// The check of an artifact's ELF shared object before the loader
// (ElfLoader.h) maps it: everything a loader reads must lie inside the
// image and be of the kinds fmc's linker writes, so that a corrupt image is
// refused with a sentence, never mapped into a crash. It reads the image as
// ld.so and dlsym would, which keeps the images loadable by them too.
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
/// empty) cannot be loaded safely, or empty. Checks, in order: the
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

/// An image that elfImageProblem accepted, as the loader (ElfLoader.h) maps
/// it: addresses are the image's own (the loader adds where it maps it).
struct ElfLayout {
  /// A loadable segment: memsz bytes at vaddr, of which the first filesz
  /// come from the image at offset; flags: PF_R | PF_W | PF_X.
  struct Segment {
    uint64_t vaddr = 0, memsz = 0, offset = 0, filesz = 0;
    uint32_t flags = 0;
  };
  /// A word to write at `offset`: the image's base plus `addend`
  /// (relative), or symbol `symbol`'s address plus `addend` (absolute,
  /// GOT and PLT entries, all bound now). REL tables' addends are read
  /// from the word itself.
  struct Relocation {
    uint64_t offset = 0;
    bool relative = false;
    uint32_t type = 0; // the machine's number, for messages
    uint64_t symbol = 0;
    int64_t addend = 0;
  };
  struct Symbol {
    std::string name;
    bool defined = false; // inside the image (else imported)
    bool absolute = false; // SHN_ABS: value is the address
    bool weak = false;
    uint64_t value = 0;
  };
  std::vector<Segment> segments; // ascending, on pages of their own
  std::vector<Relocation> relocations;
  std::vector<Symbol> symbols; // by symbol index
  std::vector<uint64_t> functions; // the address of each function asked for
};

/// elfImageProblem, and on success the image's layout in *layout.
std::string elfImageProblem(const uint8_t *image, size_t size,
                            const std::vector<std::string> &functions,
                            ElfLayout *layout);

/// The page size of this machine: the granule of memory protection.
uint64_t elfPageSize();

} // namespace fm::hal
